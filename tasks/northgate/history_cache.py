"""Northgate's history, built once per (sources, seed, history window) and reused by every pack.

Building the company and a year of its history costs most of a scenario's generation time, and
several packs ask for the same window (month-end-close, margin-bridge and
requisition-approval-queue all end their history on 2026-09-30; payment-run and its variant share
theirs). The orchestrator names a cache folder and a key for the sources the history depends on
(`PB_HISTORY_CACHE`, `PB_HISTORY_KEY`: the scenario cache's hash of the task framework and the ERP);
without both, nothing is cached and `build_northgate` runs as always.

An entry holds the database right after the history (checkpointed into one file) and the
generator-side state a pack goes on from: the seeded random source's state, the parties, the
catalog, the tokens, the history's world and the request count. A pack gets a copy of the
database and that state restored, so what it plants next is what it would have planted on a
freshly built company: the same scenario, byte for byte (tests/tasks/test_history_cache.py).

Entries are written to a temporary folder and renamed into place, under a lock, so concurrent
generators never read half an entry; a damaged entry (unreadable state) is rebuilt.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import shutil
import tempfile
from pathlib import Path

from erp_service.kernel.db import Database
from erp_service.setup import CompanyBuilder

from .api import InProcessErp
from .build import build_northgate
from .company import Northgate

CACHE_ENV, KEY_ENV = "PB_HISTORY_CACHE", "PB_HISTORY_KEY"
_FORMAT = "history-v1"


def northgate_with_history(path: Path, seed: int, *, history_end: str, last_order: str | None = None
                           ) -> tuple[Northgate, InProcessErp]:
    """`build_northgate`, through the history cache when the environment names one."""
    root, key = os.environ.get(CACHE_ENV), os.environ.get(KEY_ENV)
    if not root or not key:
        return build_northgate(path, seed, history_end=history_end, last_order=last_order)
    entry = Path(root) / _entry_name(key, seed, history_end, last_order)
    restored = _restore(entry, path)
    if restored is not None:
        return restored
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.parent / f".{entry.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another generator may be building this very entry
        restored = _restore(entry, path)
        if restored is not None:
            return restored
        ng, erp = build_northgate(path, seed, history_end=history_end, last_order=last_order)
        _store(entry, path, ng, erp)
        return ng, erp


def _entry_name(key: str, seed: int, history_end: str, last_order: str | None) -> str:
    ident = f"{_FORMAT}|{key}|{seed}|{history_end}|{last_order}"
    return f"seed-{seed}-{hashlib.sha256(ident.encode()).hexdigest()[:20]}"


def _store(entry: Path, db_path: Path, ng: Northgate, erp: InProcessErp) -> None:
    state = {"seed": ng.seed, "rng": ng.rng.getstate(), "vendors": ng.vendors, "customers": ng.customers,
             "catalog": ng.catalog, "tokens": ng.tokens, "world": dict(erp.world.data), "requests": erp.requests}
    ng.builder.db.raw("PRAGMA wal_checkpoint(TRUNCATE)")  # the file alone holds every committed row
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{entry.name}-", dir=entry.parent))
    try:
        shutil.copyfile(db_path, tmp / "company.db")
        (tmp / "state.pickle").write_bytes(pickle.dumps(state, protocol=5))
        if entry.exists():
            shutil.rmtree(entry)  # a damaged entry, found unreadable by `_restore`
        os.rename(tmp, entry)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _restore(entry: Path, db_path: Path) -> tuple[Northgate, InProcessErp] | None:
    """The cached company copied to `db_path` with its state, or None (no entry, or damaged)."""
    try:
        state = pickle.loads((entry / "state.pickle").read_bytes())  # noqa: S301 — our own cache, written above
        if not (entry / "company.db").is_file():
            return None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(entry / "company.db", db_path)
    builder = CompanyBuilder(Database(db_path))
    builder.db.raw("PRAGMA synchronous=OFF")  # as build_northgate sets it: generation is all-or-nothing
    ng = Northgate(builder=builder, seed=state["seed"], rng=_rng(state["rng"]), vendors=state["vendors"],
                   customers=state["customers"], catalog=state["catalog"], tokens=state["tokens"])
    erp = InProcessErp(builder, ng.tokens, state["world"])
    erp.requests = state["requests"]
    return ng, erp


def _rng(state: object):  # -> random.Random
    import random

    rng = random.Random()
    rng.setstate(state)  # type: ignore[arg-type]
    return rng
