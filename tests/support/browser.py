"""A headless Chromium for tests: installed once with apt, driven with selenium.

Use it like this::

    from browser import browser_unavailable, headless_driver, screenshot

    reason = browser_unavailable()
    if reason:
        pytest.skip(reason)
    driver = headless_driver()
    try:
        driver.get(url)
        screenshot(driver, out_dir, "inbox")
    finally:
        driver.quit()

Or take the ``chrome`` fixture shape: ``with browser_session() as driver: ...`` (skips by itself).

The window size is fixed (``WINDOW``) and the device scale factor is 1, so screenshots of the same
page are the same size on every machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

WINDOW = (1280, 860)
_APT_PACKAGES = ("chromium", "chromium-driver")
_CHROMIUM = ("/usr/bin/chromium", "/usr/lib/chromium/chromium")
_DRIVER = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")

_lock = threading.Lock()
_checked: str | None = None  # "" once the browser is known to work; else the reason it does not


def _first_existing(paths: tuple[str, ...], name: str) -> str | None:
    for path in paths:
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


def chromium_path() -> str | None:
    """Path of the chromium binary, or None when it is not installed."""
    return _first_existing(_CHROMIUM, "chromium")


def chromedriver_path() -> str | None:
    """Path of chromium's driver, or None when it is not installed."""
    return _first_existing(_DRIVER, "chromedriver")


def _apt_install() -> str:
    """Install chromium and its driver with apt; '' on success, else why it failed."""
    if shutil.which("apt-get") is None:
        return "apt-get is not available to install chromium"
    if os.geteuid() != 0:
        return "chromium is not installed and installing it needs root (apt-get install -y chromium chromium-driver)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", *_APT_PACKAGES]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        # The package lists may be stale or missing: refresh once and retry.
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, text=True, timeout=600)
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"apt-get install chromium chromium-driver failed: {tail[0]}"
    return ""


def browser_unavailable() -> str:
    """'' when a headless chromium can be driven here, else the reason (for ``pytest.skip``).

    Installs chromium and chromium-driver with apt the first time (once per process) when they are
    missing, as the Makefile does for debootstrap.
    """
    global _checked
    with _lock:
        if _checked is not None:
            return _checked
        try:
            import selenium  # noqa: F401
        except ImportError:
            _checked = "selenium is not installed (pip install -e '.[test]')"
            return _checked
        if chromium_path() is None or chromedriver_path() is None:
            reason = _apt_install()
            if reason:
                _checked = reason
                return _checked
        if chromium_path() is None or chromedriver_path() is None:
            _checked = "chromium or chromedriver is still missing after apt-get install"
            return _checked
        _checked = ""
        return _checked


def headless_driver(download_dir: Path | None = None) -> WebDriver:
    """A new headless chromium driven by selenium, window ``WINDOW``; the caller quits it.

    Raises RuntimeError with the reason when no browser can be driven here.
    """
    reason = browser_unavailable()
    if reason:
        raise RuntimeError(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium_path() or ""
    for arg in (
        "--headless=new",
        "--no-sandbox",  # tests run as root in a container-less CI shell
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",  # never phone home: only loopback traffic from tests
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--font-render-hinting=none",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--lang=en-GB",
    ):
        options.add_argument(arg)
    if download_dir is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(download_dir)})
    service = Service(executable_path=chromedriver_path() or "")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_window_size(*WINDOW)
    driver.set_page_load_timeout(120)
    return driver


def screenshot(driver: WebDriver, folder: Path, name: str, full_page: bool = False) -> Path:
    """Save a PNG of the current page as ``folder/name.png`` and return its path.

    ``full_page`` grows the window to the page's height for the shot (then restores ``WINDOW``),
    so a long report is captured whole; the width stays fixed.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    if full_page:
        height = int(driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"))
        driver.set_window_size(WINDOW[0], max(WINDOW[1], min(height, 4000)))
    try:
        if not driver.save_screenshot(str(path)):
            raise RuntimeError(f"chromium did not write the screenshot {path}")
    finally:
        if full_page:
            driver.set_window_size(*WINDOW)
    return path


@contextmanager
def browser_session(download_dir: Path | None = None) -> Iterator[WebDriver]:
    """A headless driver for a ``with`` block; skips the calling test when no browser is available."""
    import pytest

    reason = browser_unavailable()
    if reason:
        pytest.skip(reason)
    driver = headless_driver(download_dir)
    try:
        yield driver
    finally:
        driver.quit()
