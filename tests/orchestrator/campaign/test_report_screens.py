"""Screenshots of the per-check view and an attempt page in a real (headless) Chromium.

The report of a real local campaign (two packs, a fault condition, negative controls) is opened
from disk; the test takes a PNG of the per-check heat map and of the fault negative control's
attempt page, and checks the layout the eye would: nothing wider than the window, no text
spilling out of a heat-map square, every table inside the page or inside its own scroll box,
and the attempt page's sections in order. The PNGs are kept in the test's folder, and copied to
`$PB_SCREENSHOTS_DIR` when it is set, for a person to look at.
"""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from browser import WINDOW, browser_session, screenshot

from orchestrator.report.label_page import PAGES_DIR, write_report

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a real browser (chromium installed by apt on first use): make test-heavy


def _png_size(path: Path) -> tuple[int, int]:
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


def _keep(paths: list[Path]) -> None:
    target = os.environ.get("PB_SCREENSHOTS_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for p in paths:
            shutil.copyfile(p, Path(target) / p.name)


OVERFLOW_JS = """
const vw = document.documentElement.clientWidth;
const out = [];
if (document.documentElement.scrollWidth > vw) out.push('page wider than the window: ' + document.documentElement.scrollWidth);
for (const t of document.querySelectorAll('table, svg')) {
  if (t.closest('.wide')) continue;
  const r = t.getBoundingClientRect();
  if (r.right > vw + 1) out.push(t.tagName + ' ends at ' + Math.round(r.right) + ' > ' + vw);
}
for (const td of document.querySelectorAll('td.h')) {
  if (td.scrollWidth > td.clientWidth + 1) out.push('heat square overflows: ' + td.textContent);
}
return out;
"""


def test_screenshots_of_the_per_check_view_and_an_attempt_page(tmp_path_factory, tmp_path: Path) -> None:
    from publish_campaign import campaign
    from selenium.webdriver.common.by import By

    c = campaign(tmp_path_factory)
    index = write_report(c.runs, c.label, tmp_path / "report" / "report.html")
    [page] = [p for p in (index.parent / PAGES_DIR).glob("neg-blind-retry__payment-run__lost-writes.*.html")]
    shots: list[Path] = []
    with browser_session() as driver:
        driver.get(index.as_uri())
        assert driver.title == f"Campaign {c.label}"
        assert driver.execute_script(OVERFLOW_JS) == []
        heading = driver.find_element(By.XPATH, "//h2[starts-with(., 'Per check')]")
        driver.execute_script("arguments[0].scrollIntoView()", heading)
        driver.set_window_size(1280, 2400)  # tall enough for a whole heat map in one element shot
        tables = driver.find_elements(By.CSS_SELECTOR, "table.heat")
        assert len(tables) == 2  # one per task
        for i, table in enumerate(tables):
            path = tmp_path / f"per-check-{i + 1}.png"
            table.screenshot(str(path))
            w, h = _png_size(path)
            assert 300 < w <= 1280 and h > 200, (w, h)
            shots.append(path)
            squares = table.find_elements(By.CSS_SELECTOR, "td.h")
            assert squares and all(s.size["height"] < 60 for s in squares)  # one line of rate, one of counts
        driver.set_window_size(*WINDOW)
        driver.execute_script("window.scrollTo(0, 0)")
        shots.append(screenshot(driver, tmp_path, "report-index", full_page=True))

        driver.get(page.as_uri())
        assert driver.execute_script(OVERFLOW_JS) == []
        order = [h.text.split(" (")[0].split(":")[0] for h in driver.find_elements(By.TAG_NAME, "h2")]
        assert order[:2] == ["Checks", "Turns"] and "Breaches" in order and order[-1] == "Fault metrics"
        verdict = driver.find_element(By.CSS_SELECTOR, "p span.fail")
        assert verdict.text == "FAIL (breach)"
        shots.append(screenshot(driver, tmp_path, "attempt-page", full_page=True))
        for name in ("Breaches", "Fault metrics"):
            section = driver.find_element(By.XPATH, f"//h2[starts-with(., '{name}')]")
            driver.execute_script("arguments[0].scrollIntoView()", section)
            path = tmp_path / f"attempt-{name.split()[0].lower()}.png"
            driver.save_screenshot(str(path))
            shots.append(path)
    for p in shots:
        assert p.stat().st_size > 5_000, f"{p} looks empty"
    _keep(shots)
