"""The database file's bytes depend on its content alone: the schema is created in one order in
every process (SQLAlchemy keeps indexes in a set), and the compacted file does not remember how
many checkpoints its source went through. The scenario cache and the shared history rely on it:
the same seed must give the same scenario.db."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO_ROOT

from erp_service.kernel.db import Database

_CREATE = "import sys; from erp_service.kernel.db import Database; Database.create(sys.argv[1]).close()"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_schema_bytes_are_the_same_in_every_process(tmp_path: Path):
    digests, orders = set(), set()
    for n, hash_seed in enumerate(("0", "1", "random")):
        path = tmp_path / f"schema-{n}.db"
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(REPO_ROOT))
        subprocess.run([sys.executable, "-c", _CREATE, str(path)], env=env, check=True, timeout=120)
        digests.add(_sha(path))
        with sqlite3.connect(path) as conn:
            orders.add(tuple(r[0] for r in conn.execute("SELECT name FROM sqlite_master ORDER BY rowid")))
    assert len(orders) == 1, "sqlite_master order differs between processes"
    (order,) = orders
    indexes = [name for name in order if name.startswith("ix_")]
    assert indexes and len(digests) == 1


def _fill(db: Database, checkpoint_every: int | None) -> None:
    driver = db.conn.connection.driver_connection
    assert driver is not None
    for i in range(400):
        with db.transaction() as conn:
            conn.exec_driver_sql("INSERT INTO meta (key, value) VALUES (?, ?)", (f"k{i}", "v" * (i % 50)))
        if checkpoint_every and i % checkpoint_every == 0:
            db.checkpoint()


def test_compacted_file_does_not_depend_on_checkpoint_history(tmp_path: Path):
    files = []
    for n, every in enumerate((None, 7, 100)):
        db = Database.create(tmp_path / f"src-{n}.db")
        _fill(db, every)
        out = tmp_path / f"compact-{n}.db"
        db.compact_to(out)
        db.close()
        files.append(out)
    assert len({_sha(f) for f in files}) == 1
    # the copy is complete and self-contained: a rollback-journal file holding every row
    with sqlite3.connect(files[0]) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == 400
