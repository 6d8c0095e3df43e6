"""The SQLite database of one attempt: one connection, one lock, explicit transactions.

All work is serialised by one re-entrant lock. That keeps audit ids, document ids and the
counterparties' actions in one deterministic order, which the canonical hash relies on; one
attempt's load is small enough that this costs nothing that matters.
"""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import MetaData, create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateIndex, CreateTable

from .schema import meta, metadata
from .storage import StorageHealth, probe_write, storage_cause


def make_engine(path: str | Path) -> Engine:
    """An engine on one SQLite file with explicit `BEGIN IMMEDIATE` transactions."""
    engine = create_engine(
        f"sqlite:///{path}",
        poolclass=StaticPool,
        # The driver keeps this many statements prepared (default 128): the kernel's own and the
        # table helpers' shapes (`kernel.prepared`) run as fixed SQL text that it re-uses.
        connect_args={"check_same_thread": False, "isolation_level": None, "cached_statements": 512},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record) -> None:  # pragma: no cover - driver hook
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:  # pragma: no cover - driver hook
        driver_of(conn).execute("BEGIN IMMEDIATE")   # on the driver: no SQLAlchemy statement to build

    return engine


def driver_of(conn: Connection) -> sqlite3.Connection:
    """The sqlite3 connection under `conn`, for fixed statements of the kernel's own tables run
    inside `conn`'s transaction (same connection, same transaction, none of SQLAlchemy's
    per-statement work)."""
    driver = conn.connection.driver_connection
    if driver is None:  # only after close()
        raise RuntimeError("the database connection is closed")
    return driver


def create_schema(conn: Connection, md: MetaData) -> None:
    """Create `md`'s tables, then their indexes in name order.

    SQLAlchemy keeps a table's indexes in a set, so `create_all` emits them in an order that
    changes from one process to the next, and with it the order of sqlite_master and the
    database file's bytes; the same seed must give the same scenario file, not only the same
    content."""
    for table in md.sorted_tables:
        conn.execute(CreateTable(table))
    for index in sorted((i for t in md.sorted_tables for i in t.indexes), key=lambda i: str(i.name)):
        conn.execute(CreateIndex(index))


class Database:
    """One open ERP database. Use `transaction()` for every unit of work."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.engine = make_engine(self.path)
        self.conn: Connection = self.engine.connect()
        self.lock = threading.RLock()
        #: The cause of the last storage failure a request met, or None (shown by the health check).
        self.last_storage_error: str | None = None

    @classmethod
    def create(cls, path: str | Path) -> Database:
        """Create a new, empty database file with every table (no company data)."""
        # Domain modules register their tables on import.
        from .. import domains  # noqa: F401

        path = Path(path)
        if path.exists():
            raise FileExistsError(path)
        db = cls(path)
        with db.lock, db.conn.begin():
            create_schema(db.conn, metadata)
        return db

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction, or a savepoint when one is already open on this thread's work."""
        with self.lock:
            if self.conn.in_transaction():
                with self.conn.begin_nested():
                    yield self.conn
            else:
                with self.conn.begin():
                    yield self.conn

    def business_date(self) -> str:
        """The current business date (ISO)."""
        with self.transaction() as conn:
            row = conn.execute(meta.select().where(meta.c.key == "business_date")).first()
        if row is None:
            raise RuntimeError("database has no business_date: not a scenario database")
        return row.value

    def note_failure(self, exc: BaseException) -> str | None:
        """Remember `exc` if it is a storage failure; its cause, or None for any other error."""
        cause = storage_cause(exc)
        if cause is not None:
            self.last_storage_error = cause
        return cause

    def storage_health(self) -> StorageHealth:
        """Whether the next write can succeed: a file can be written and synced beside the
        database, and the write lock can be taken (and released) on this connection."""
        problem = probe_write(self.path.parent)
        if problem is not None:
            return StorageHealth(False, problem)
        try:
            with self.lock:
                self.raw("BEGIN IMMEDIATE")
                self.raw("ROLLBACK")
            self.business_date()
        except Exception as exc:  # noqa: BLE001 — any failure here is the answer
            return StorageHealth(False, storage_cause(exc) or f"{type(exc).__name__}: {exc}")
        return StorageHealth(True)

    def raw(self, sql: str) -> None:
        """Run a statement outside any transaction (PRAGMA, VACUUM) on the driver connection."""
        with self.lock:
            if self.conn.in_transaction():
                raise RuntimeError(f"{sql!r} cannot run inside a transaction")
            self._driver().execute(sql)

    def _driver(self) -> sqlite3.Connection:
        driver = self.conn.connection.driver_connection
        if driver is None:  # only after close()
            raise RuntimeError(f"the database {self.path} is closed")
        return driver

    def checkpoint(self) -> None:
        """Move the WAL into the main file so a file copy is complete."""
        self.raw("PRAGMA wal_checkpoint(TRUNCATE)")

    def backup_to(self, dest: str | Path) -> None:
        """Write a consistent copy of the database to `dest` (SQLite online backup)."""
        with self.lock:
            src = self._driver()
            target = sqlite3.connect(str(dest))
            try:
                src.backup(target)
            finally:
                target.close()

    def compact_to(self, dest: str | Path) -> None:
        """Write the database, compacted, to a new file `dest` (VACUUM INTO, rollback journal).

        Unlike an in-place VACUUM the new file's header starts from fixed counters, so its bytes
        depend on the content alone, not on how many checkpoints the source went through."""
        with self.lock:
            if self.conn.in_transaction():
                raise RuntimeError("VACUUM INTO cannot run inside a transaction")
            self._driver().execute("VACUUM INTO ?", (str(dest),))

    def close(self) -> None:
        """Checkpoint and close."""
        with self.lock:
            try:
                self.checkpoint()
            finally:
                self.conn.close()
                self.engine.dispose()
