"""SHA-256 of files and folder trees, for records and cache keys (the one place that hashes trees).

`tree_sha256` hashes (relative path, file SHA-256) of every regular file in path order, symlinks
skipped: the workspace hash of result.json.
"""
from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a file's bytes; None when it is not a regular file."""
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_sha256(root: Path) -> str | None:
    """SHA-256 over (relative path, file SHA-256) of every regular file, in path order; None when
    `root` is not a folder. Symlinks are skipped (a copied-out workspace holds none anyway)."""
    if not root.is_dir():
        return None
    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file() and not q.is_symlink()):
        h.update(str(p.relative_to(root)).encode() + b"\0" + (file_sha256(p) or "").encode() + b"\n")
    return h.hexdigest()
