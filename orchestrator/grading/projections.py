"""Projections: named SQL over a database, written as CSV so a verdict can be read by hand.

Values are written in one canonical text form (the same for the agent and the reference), so
the checks compare text: floats to 4 places with trailing zeros stripped, None as empty.
"""
from __future__ import annotations

import csv
import io
import sqlite3
from dataclasses import dataclass
from pathlib import Path


def connect_ro(path: Path | str) -> sqlite3.Connection:
    """Open a SQLite file read-only; never creates, writes or checkpoints it.

    A database left with a non-empty WAL must be read through the WAL (mode=ro); one without
    can be opened `immutable`, which needs no -shm file and no write access to the folder.
    """
    p = Path(path).resolve()
    if not p.exists():
        raise FileNotFoundError(f"database {p} does not exist")
    wal = p.with_name(p.name + "-wal")
    query = "mode=ro" if wal.exists() and wal.stat().st_size > 0 else "mode=ro&immutable=1"
    conn = sqlite3.connect(f"{p.as_uri()}?{query}", uri=True)
    conn.execute("PRAGMA query_only = ON")
    return conn


def fmt_value(v: object) -> str:
    """The canonical text of one cell value."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        text = f"{v:.4f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


@dataclass
class Table:
    """A projection's result as text: column names and rows (each a dict column -> text)."""

    columns: list[str]
    rows: list[dict[str, str]]

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=self.columns, lineterminator="\n")
        w.writeheader()
        w.writerows(self.rows)
        return buf.getvalue()


def run_projection(conn: sqlite3.Connection, sql: str, params: dict[str, object]) -> Table:
    """Run one projection; rows sorted by their text so output order never depends on the plan."""
    cur = conn.execute(sql, params)
    cols = [d[0] for d in cur.description or []]
    if len(set(cols)) != len(cols):
        raise ValueError(f"projection returns duplicate column names: {cols}")
    rows = [{c: fmt_value(v) for c, v in zip(cols, r, strict=False)} for r in cur.fetchall()]
    rows.sort(key=lambda r: [r[c] for c in cols])
    return Table(cols, rows)


def run_all(db_path: Path, projections: dict[str, str], params: dict[str, object]) -> dict[str, Table | Exception]:
    """Run every projection on `db_path` (read-only); a failing one maps to its exception."""
    conn = connect_ro(db_path)
    try:
        out: dict[str, Table | Exception] = {}
        for name, sql in projections.items():
            try:
                out[name] = run_projection(conn, sql, params)
            except Exception as exc:  # recorded against the checks that use it
                out[name] = exc
        return out
    finally:
        conn.close()


def write_csvs(tables: dict[str, Table | Exception], out_dir: Path, suffix: str = "") -> None:
    """Write `<name><suffix>.csv` per projection (an `.error.txt` for one that failed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        if isinstance(t, Table):
            (out_dir / f"{name}{suffix}.csv").write_text(t.to_csv(), encoding="utf-8")
        else:
            (out_dir / f"{name}{suffix}.error.txt").write_text(f"{type(t).__name__}: {t}\n", encoding="utf-8")


def read_csv(path: Path) -> Table:
    """Read a projection CSV written by `write_csvs`."""
    with open(path, newline="", encoding="utf-8") as fh:
        r = csv.DictReader(fh)
        cols = list(r.fieldnames or [])
        return Table(cols, [dict(row) for row in r])
