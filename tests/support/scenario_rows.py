"""Reading a generated scenario's database in pack tests: one query's rows, connection closed."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def rows(db: Path | str, sql: str, *args: Any) -> list[tuple]:
    """The rows `sql` (with `?` parameters `args`) returns on the SQLite file `db`."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()
