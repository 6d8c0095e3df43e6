"""SHA-256 of files and folder trees: the one module that hashes trees.

Three uses, three stable definitions (each value is recorded somewhere, so none may change):

* `tree_sha256(root)`      a source tree (a task pack, a shared part): sorted relative paths and
                           file digests, caches and .pyc left out. Campaign identity and
                           provenance compare it across runs.
* `workspace_sha256(root)` the agent's copied-out workspace: (relative path, file SHA-256) of
                           every regular file, symlinks skipped. result.json `hashes.workspace`.
* `update_with_tree(h, base, rel)` feeds a file or folder (path names and bytes) into a running
                           hash: the scenario cache key (orchestrator/scenarios/cache.py).

and `canonical_json(obj)` / `sha256_bytes(data)`: the one serialisation hashed into attempt ids,
ledger lines and manifests, and the digest of bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

_SOURCE_SKIP_PARTS = frozenset({"__pycache__", ".pytest_cache"})
_CACHE_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache"})


def canonical_json(obj: Any) -> str:
    """The one serialisation used for hashing and for ledger lines: sorted keys, no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a file's bytes; None when it is not a regular file."""
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_sha256(root: Path) -> str:
    """SHA-256 over a source folder's files: sorted relative paths and file contents (caches excluded)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if _SOURCE_SKIP_PARTS.intersection(rel.parts) or path.suffix == ".pyc":
            continue
        h.update(rel.as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def workspace_sha256(root: Path) -> str | None:
    """SHA-256 over (relative path, file SHA-256) of every regular file, in path order; None when
    `root` is not a folder. Symlinks are skipped (a copied-out workspace holds none anyway)."""
    if not root.is_dir():
        return None
    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file() and not q.is_symlink()):
        h.update(str(p.relative_to(root)).encode() + b"\0" + (file_sha256(p) or "").encode() + b"\n")
    return h.hexdigest()


def update_with_tree(h: Any, base: Path, rel: str) -> None:
    """Feed `base/rel` into `h`: a file's name and bytes, or every file of a folder (hidden files,
    caches and .pyc/.pyo left out) in walk order with sorted names; a missing path as a marker."""
    root = base / rel
    if root.is_file():
        h.update(f"F {rel}\n".encode())
        h.update(root.read_bytes())
        return
    if not root.is_dir():
        h.update(f"- {rel}\n".encode())
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _CACHE_SKIP_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            if fn.endswith((".pyc", ".pyo")) or fn.startswith("."):
                continue
            p = Path(dirpath) / fn
            h.update(f"F {p.relative_to(base).as_posix()}\n".encode())
            h.update(p.read_bytes())
