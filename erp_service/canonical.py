"""The canonical dump of a database and its SHA-256 (docs/contracts.md §6).

Rows are sorted, wall-clock columns left out, so the same starting database and the same
requests give the same hash whatever the SQLite page layout or the time of day. Token secrets
are left out too: every attempt's copy gets fresh random ones (kernel/identity.py
rekey_tokens), and the token ids the audit log records stay in.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .kernel.schema import is_volatile_column

#: Columns that differ between two runs of the same requests by design, not by what was done.
SECRET_COLUMNS = frozenset({("tokens", "secret")})


def canonical_lines(db_path: str | Path) -> Iterator[str]:
    """The canonical dump, one line per table header or row."""
    uri = f"file:{Path(db_path).resolve()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        for table in tables:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            keep = [c for c in cols if not is_volatile_column(c) and (table, c) not in SECRET_COLUMNS]
            yield f"# {table} {json.dumps(keep)}"
            select_list = ", ".join(f'"{c}"' for c in keep) or "1"
            rows = [json.dumps(list(r), ensure_ascii=False, default=str)
                    for r in conn.execute(f'SELECT {select_list} FROM "{table}"')]
            rows.sort()
            yield from rows
    finally:
        conn.close()


def canonical_hash(db_path: str | Path) -> str:
    """SHA-256 of the canonical dump."""
    digest = hashlib.sha256()
    for line in canonical_lines(db_path):
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()
