"""Redacted copies of one attempt's files for a publication bundle.

Every file is copied as it is when it holds no secret (`copy`), as a redacted copy otherwise
(`redacted`: JSON lines line by line, JSON value by value, other text as text, so traces keep
their event order), or not at all (`withheld`: its SHA-256 only) — a binary file that holds a
secret, or what the publisher withholds. A final database is redacted cell by cell in a copy
(credentials and restricted values out, every other value as it was) and rewritten whole
(VACUUM), so no old page keeps a value.
"""
from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.publish.redaction import Secrets

SKIP_SUFFIXES = ("-wal", "-shm", "-journal", ".tmp")  # transient files of a database or a write


@dataclass
class Entry:
    """What became of one file of the record."""

    path: str                 # relative to the bundle
    mode: str                 # copy | redacted | withheld
    original_sha256: str
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = {"mode": self.mode, "original_sha256": self.original_sha256}
        if self.reason:
            out["reason"] = self.reason
        return out


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def redact_bytes(raw: bytes, name: str, secrets: Secrets) -> bytes | None:
    """The redacted bytes of a file (same bytes when clean), or None for a binary file that holds a secret."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        probe = raw.decode("latin-1")
        return None if secrets.found_in(probe) else raw
    if name.endswith(".jsonl"):
        out = secrets.jsonl(text)
    elif name.endswith(".json"):
        out = secrets.json_text(text)
        if text.endswith("\n") and not out.endswith("\n"):
            out += "\n"
    else:
        out = "\n".join(secrets.text(line) for line in text.split("\n"))
    return raw if out == text else out.encode("utf-8")


def copy_file(src: Path, dst: Path, rel: str, secrets: Secrets) -> Entry:
    """Copy one file into the bundle, redacted where it must be."""
    raw = src.read_bytes()
    original = hashlib.sha256(raw).hexdigest()
    out = redact_bytes(raw, src.name, secrets)
    if out is None:
        return Entry(rel, "withheld", original, "binary file holding a credential or restricted value")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(out)
    return Entry(rel, "copy" if out == raw else "redacted", original)


def _redact_cell(value: Any, secrets: Secrets) -> Any:
    if isinstance(value, str):
        return secrets.json_text(value)
    if isinstance(value, bytes):
        if value.startswith(b"%PDF"):
            from erp_service.domains.comms import pdf_text

            # A document is replaced whole: a note naming what it held (the placeholders of the
            # values the grader counts in it, as the grader reads a PDF attachment's text).
            return secrets.attachment("\n".join(pdf_text(value))) or value
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return secrets.attachment(value.decode("latin-1")) or value
        out = secrets.json_text(text)
        return value if out == text else out.encode("utf-8")
    return value


def redact_db(src: Path, dst: Path, secrets: Secrets) -> int:
    """Write a redacted copy of a SQLite database to `dst`; return the number of cells changed."""
    from orchestrator.grading.projections import connect_ro

    dst.parent.mkdir(parents=True, exist_ok=True)
    work = dst.with_name(dst.name + ".work")
    work.unlink(missing_ok=True)
    source = connect_ro(src)
    conn = sqlite3.connect(work)
    try:
        source.backup(conn)
    finally:
        source.close()
    changed = 0
    try:
        triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type='trigger' AND sql IS NOT NULL").fetchall()
        for name, _ in triggers:  # append-only guards (audit log) would refuse the redaction
            conn.execute(f'DROP TRIGGER "{name}"')
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            try:
                rows = conn.execute(f'SELECT rowid, * FROM "{table}"').fetchall()
            except sqlite3.OperationalError:
                continue  # a WITHOUT ROWID table: none in bb-erp; left as it is
            for row in rows:
                rowid, values = row[0], row[1:]
                updates = {}
                for col, value in zip(cols, values, strict=True):
                    new = _redact_cell(value, secrets)
                    if new != value:
                        updates[col] = new
                if updates:
                    sets = ", ".join(f'"{c}" = ?' for c in updates)
                    conn.execute(f'UPDATE "{table}" SET {sets} WHERE rowid = ?', [*updates.values(), rowid])
                    changed += len(updates)
        for _, sql in triggers:
            conn.execute(sql)
        conn.commit()
        dst.unlink(missing_ok=True)
        conn.execute("VACUUM INTO ?", (str(dst),))
    finally:
        conn.close()
        work.unlink(missing_ok=True)
    return changed
