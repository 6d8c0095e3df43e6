"""Storage failures: recognising them, and the health probe that tells the truth about them.

A full disk, an I/O error or a database held locked by someone else is not a bug in a
request: the ERP answers it as a 503 problem (``storage_unavailable``) and `/control/health`
says so, instead of a plain-text 500 and a health check that still answers ``ok``.
"""
from __future__ import annotations

import errno
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

#: SQLite primary result codes that mean "the storage failed", not "the request was wrong":
#: BUSY, LOCKED, NOMEM, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, NOTADB.
STORAGE_SQLITE_CODES = frozenset({5, 6, 7, 8, 10, 11, 13, 14, 26})
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EROFS, errno.EFBIG})
#: Bytes the health probe writes (and removes) beside the database: a disk that cannot take
#: this much cannot take a day's advance either.
PROBE_BYTES = 256 * 1024
PROBE_NAME = ".erp-health-probe"


def storage_cause(exc: BaseException | None) -> str | None:
    """A one-line description when `exc` (or what it wraps) is a storage failure, else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, sqlite3.Error):
            code = getattr(exc, "sqlite_errorcode", None)
            if code is not None and (code & 0xFF) in STORAGE_SQLITE_CODES:
                return f"sqlite: {exc}"
        elif isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            return f"{errno.errorcode.get(exc.errno or 0, 'OSError')}: {exc.strerror}"
        # SQLAlchemy keeps the driver's exception in .orig; plain chains in __cause__.
        exc = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__
    return None


@dataclass(frozen=True)
class StorageHealth:
    """What the probe found: ``ok``, and when not, why."""

    ok: bool
    detail: str | None = None


def probe_write(folder: Path) -> str | None:
    """Write, sync and remove a small file in `folder`; the failure's description, or None."""
    probe = folder / PROBE_NAME
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(bytes(PROBE_BYTES))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        return f"cannot write beside the database: {exc.strerror or exc}"
    return None
