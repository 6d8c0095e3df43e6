"""The shared history cache (tasks/northgate/history_cache.py): a pack generated on a cached
history writes the same scenario, byte for byte, as one generated on a freshly built company;
a pack sharing the history window reuses the entry; a damaged entry is rebuilt; nothing is
cached unless the orchestrator names the cache."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator.scenarios.cache import shared_sources_hash
from tasks.registry import load_task

pytestmark = [pytest.mark.slow, pytest.mark.heavy, pytest.mark.timeout(1800)]


def _files(scenario: Path) -> dict[str, str]:
    return {str(p.relative_to(scenario)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(scenario.rglob("*")) if p.is_file()}


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Any]:
    """payment-run seed 0 generated fresh (with a cache named only in the caller's environment,
    which must not be inherited), then on the cache twice: a miss and a hit."""
    tmp = tmp_path_factory.mktemp("history")
    cache, key = tmp / "history", shared_sources_hash()[:16]
    pack = load_task("payment-run")
    saved = {k: os.environ.get(k) for k in ("PB_HISTORY_CACHE", "PB_HISTORY_KEY")}
    os.environ.update(PB_HISTORY_CACHE=str(tmp / "stray"), PB_HISTORY_KEY="k")
    try:
        fresh = _files(pack.generate(0, tmp / "fresh"))
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    miss = _files(pack.generate(0, tmp / "miss", history_cache=(cache, key)))
    (entry,) = _entries(cache)
    stamp = (entry / "company.db").stat().st_mtime_ns
    hit = _files(pack.generate(0, tmp / "hit", history_cache=(cache, key)))
    return {"tmp": tmp, "cache": cache, "key": key, "entry": entry, "stamp": stamp,
            "fresh": fresh, "miss": miss, "hit": hit}


def test_nothing_is_cached_unless_the_orchestrator_names_the_cache(built):
    assert not (built["tmp"] / "stray").exists()


def test_cached_history_gives_the_same_scenario_bytes(built):
    assert built["fresh"] == built["miss"] == built["hit"]
    assert (built["entry"] / "company.db").stat().st_mtime_ns == built["stamp"]  # the hit read it


def test_a_pack_with_the_same_history_window_reuses_the_entry(built):
    variant = load_task("payment-run-need-to-know")
    out = variant.generate(0, built["tmp"] / "variant", history_cache=(built["cache"], built["key"]))
    assert _entries(built["cache"]) == [built["entry"]]
    assert (built["entry"] / "company.db").stat().st_mtime_ns == built["stamp"]
    assert (out / "scenario.db").is_file()


def test_a_damaged_entry_is_rebuilt_not_trusted(built):
    (built["entry"] / "state.pickle").write_bytes(b"not a pickle")
    again = _files(load_task("payment-run").generate(0, built["tmp"] / "again", history_cache=(built["cache"], built["key"])))
    assert again == built["fresh"]
    assert (built["entry"] / "state.pickle").read_bytes() != b"not a pickle"
