"""Temporary folders under `.cache/` left by an orchestrator that was killed (SIGKILL, OOM, power).

Two kinds, two proofs that nobody uses them any more:

* scenario builds (`.cache/scenarios/<task>/.tmp-<entry>-<random>/`) are made while holding the
  entry's build lock (`.<entry>.lock`, an flock the kernel drops when the builder dies): when the
  lock can be taken, no live process is building that entry and its `.tmp-` folders are dead.
* attempt scratch folders of the local backend (`.cache/attempts/<attempt id>/`) carry an owner
  record (`claim`, the same owner facts as the engine labels in orchestrator/labels.py): when the
  owner is provably dead (no such process, another start time, another boot) the folder goes.
  A folder without an owner record is left alone (it may belong to an older run still going).

`sweep_cache(config)` does both; commands call it before they build anything, and the owners of
the folders call `remove_stale_builds` / `claim` where they create them.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
from pathlib import Path
from typing import Any

from orchestrator import labels as L
from orchestrator.logs import get_logger
from orchestrator.scenarios.folder import cache_root_default

log = get_logger(__name__)

OWNER_FILE = ".owner.json"
BUILD_PREFIX = ".tmp-"


def claim(folder: Path) -> None:
    """Record this process as the owner of `folder` (a temporary folder it just created)."""
    tmp = folder / (OWNER_FILE + ".part")
    tmp.write_text(json.dumps(L.Owner.current().labels(), sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(folder / OWNER_FILE)


def owner_of(folder: Path) -> L.OwnerState:
    """Whether the process that claimed `folder` still runs (UNKNOWN without a readable claim)."""
    try:
        data = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return L.OwnerState.UNKNOWN
    return L.owner_state(data if isinstance(data, dict) else None)


def sweep_owned(root: Path) -> list[Path]:
    """Remove the folders under `root` whose claiming process is dead; return what went."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if owner_of(folder) is L.OwnerState.DEAD:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _entry_of(build_dir: Path) -> str | None:
    """`.tmp-<entry>-<random>` -> `<entry>` (mkdtemp's random part holds no '-')."""
    name = build_dir.name
    if not name.startswith(BUILD_PREFIX) or "-" not in name[len(BUILD_PREFIX):]:
        return None
    return name[len(BUILD_PREFIX):].rsplit("-", 1)[0]


def remove_stale_builds(parent: Path, entry: str) -> list[Path]:
    """Remove `.tmp-<entry>-*` folders in `parent`. Call it holding `entry`'s build lock: then no
    live process owns them (the builder that made them died before it could clean up)."""
    removed = []
    for p in sorted(parent.glob(f"{BUILD_PREFIX}{entry}-*")):
        if p.is_dir() and _entry_of(p) == entry:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def sweep_builds(cache_root: Path) -> list[Path]:
    """Remove dead scenario builds under `cache_root` (`<task>/.tmp-<entry>-*`), entry by entry,
    each under its build lock taken without waiting (a held lock: a live build, left alone)."""
    removed: list[Path] = []
    if not cache_root.is_dir():
        return removed
    for task_dir in sorted(p for p in cache_root.iterdir() if p.is_dir()):
        entries = sorted({e for p in task_dir.glob(f"{BUILD_PREFIX}*") if p.is_dir() and (e := _entry_of(p))})
        for entry in entries:
            lock_path = task_dir / f".{entry}.lock"
            with open(lock_path, "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # being built right now
                try:
                    removed += remove_stale_builds(task_dir, entry)
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
    return removed


def sweep_cache(config: Any = None) -> list[Path]:
    """Both sweeps over the configured caches (scenario cache, local scratch root); never raises."""
    removed: list[Path] = []
    with contextlib.suppress(Exception):
        removed += sweep_builds(cache_root_default())
    scratch = getattr(config, "scratch_root", None)
    if scratch is not None:
        with contextlib.suppress(OSError):
            removed += sweep_owned(Path(scratch))
    for p in removed:
        log.info("leftover_removed", path=str(p), left_by="a killed orchestrator")
    return removed
