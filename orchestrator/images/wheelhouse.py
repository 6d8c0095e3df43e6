"""Wheelhouses: the wheels of one requirements file, fetched on the host for the images'
interpreter (CPython 3.11 on bookworm's glibc), cached by a hash of the requirements."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import config
from .hashing import ContentHash, short
from .model import ImageBuildError

Report = Callable[[str], None]

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


def canonical_name(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(requirements: Path) -> dict[str, str]:
    """The `name==version` lines of a requirements file, by canonical name.

    Every non-comment line must be an exact pin: the images install offline, and an unpinned
    line would make the image depend on whatever the index served that day.
    """
    pins: dict[str, str] = {}
    for n, raw in enumerate(requirements.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _PIN.match(line)
        if not m:
            raise ImageBuildError(f"{requirements}:{n}: expected an exact pin name==version, got {raw!r}")
        name = canonical_name(m.group(1))
        if name in pins:
            raise ImageBuildError(f"{requirements}:{n}: {name} is pinned twice")
        pins[name] = m.group(2)
    return pins


def wheelhouse_hash(requirements: Path) -> str:
    """Hash of what decides the wheelhouse's content: the pins and the target interpreter."""
    h = ContentHash("wheelhouse")
    pins = read_pins(requirements)
    h.add_text("pins", "\n".join(f"{k}=={v}" for k, v in sorted(pins.items())))
    h.add_text("target", " ".join((config.IMAGE_PYTHON_ABI, *config.IMAGE_PLATFORMS)))
    return h.hexdigest()


def wheelhouse_dir(name: str, requirements: Path) -> Path:
    """The cache folder of this requirements file's wheelhouse."""
    return config.cache_dir() / "wheelhouse" / f"{name}-{short(wheelhouse_hash(requirements))}"


def ensure_wheelhouse(name: str, requirements: Path, *, force: bool = False,
                      report: Report = lambda _msg: None) -> Path:
    """Return a folder holding exactly the wheels of `requirements`, downloading them on a miss.

    Only binary wheels are accepted (nothing is compiled on a 2-core machine) and dependencies
    are not followed: a transitive dependency missing from the pins fails the image's offline
    install, which is how an incomplete pin list is caught.
    """
    dest = wheelhouse_dir(name, requirements)
    if dest.is_dir() and not force:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    report(f"wheelhouse {dest.name}: fetching {len(read_pins(requirements))} wheels for "
           f"{config.IMAGE_PYTHON_ABI}/{config.IMAGE_PLATFORM}")
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--only-binary=:all:",
            "--python-version", config.IMAGE_PYTHON_VERSION, "--implementation", "cp",
            "--abi", config.IMAGE_PYTHON_ABI,
            *(arg for plat in config.IMAGE_PLATFORMS for arg in ("--platform", plat)),
            "--dest", str(tmp), "--requirement", str(requirements),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise ImageBuildError(f"fetching the wheels of {requirements} failed:\n{tail}")
        _check_complete(tmp, requirements)
        if force and dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    report(f"wheelhouse {dest.name}: ready in {time.monotonic() - started:.1f}s")
    return dest


def _check_complete(folder: Path, requirements: Path) -> None:
    """Every pin has exactly its wheel in the folder, and nothing else is there."""
    found: dict[str, str] = {}
    for wheel in folder.glob("*.whl"):
        dist, version = wheel.name.split("-")[:2]
        found[canonical_name(dist)] = version
    pins = read_pins(requirements)
    missing = sorted(set(pins) - set(found))
    if missing:
        raise ImageBuildError(f"wheelhouse for {requirements} lacks {', '.join(missing)}")
    extra = sorted(set(found) - set(pins))
    if extra:
        raise ImageBuildError(f"wheelhouse for {requirements} has unpinned {', '.join(extra)}")
    # Wheel file names normalise versions too (e.g. 1.0 vs 1.0.0 is not an issue with ==
    # pins copied from the resolver, which is what these files hold).
    wrong = sorted(n for n in pins if found[n] != pins[n])
    if wrong:
        raise ImageBuildError(
            f"wheelhouse for {requirements}: version mismatch for "
            + ", ".join(f"{n} (pinned {pins[n]}, got {found[n]})" for n in wrong))
