"""The attempt's frozen copy of the ERP database: readable without leftovers, and its hash."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from erp_service.canonical import canonical_hash
from orchestrator.logs import get_logger

log = get_logger(__name__)


def rollback_journal(db: Path) -> None:
    """Switch the frozen copy out of WAL mode, so that readers (grader, hashes, people) do not
    leave -wal/-shm files beside it. Only the header's journal-mode bytes change."""
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA journal_mode=DELETE").fetchall()
    finally:
        con.close()


def canonical_or_none(db: Path) -> str | None:
    """The canonical hash of `db`, or None when it is missing or unreadable (the hash informs;
    grading decides)."""
    if not db.is_file():
        return None
    try:
        return canonical_hash(db)
    except Exception as exc:  # noqa: BLE001 — informative only
        log.warning("canonical_hash_failed", error=str(exc))
        return None
