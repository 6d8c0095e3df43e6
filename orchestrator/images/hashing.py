"""Content hashes: an image's tag is a hash of everything that goes into it."""
from __future__ import annotations

import hashlib
from pathlib import Path

from . import config

# Files and folders that are never part of an image's content (host build by-products).
_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache"})
_SKIP_SUFFIXES = (".pyc", ".pyo")


class ContentHash:
    """SHA-256 over named fields, each framed by its name and length so no two different
    sequences of fields can produce the same byte stream."""

    def __init__(self, kind: str) -> None:
        self._h = hashlib.sha256()
        self.add("kind", kind.encode())
        self.add("builder-version", config.BUILDER_VERSION.encode())

    def add(self, name: str, data: bytes) -> None:
        """Add one named field."""
        encoded = name.encode()
        self._h.update(b"%d:%s:%d:" % (len(encoded), encoded, len(data)))
        self._h.update(data)

    def add_text(self, name: str, text: str) -> None:
        """Add one named text field (UTF-8)."""
        self.add(name, text.encode())

    def add_file(self, name: str, path: Path) -> None:
        """Add a file's bytes under a name (its mode is added too: executable bits matter)."""
        self.add(name, path.read_bytes())
        self.add(name + "#exec", b"1" if path.stat().st_mode & 0o111 else b"0")

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def tree_files(root: Path) -> list[Path]:
    """Every regular file under `root` that belongs to the image, as sorted relative paths.

    Skips bytecode caches and symlinks (an image never needs a link into the host). A missing
    root gives an empty list: a package that is not written yet still builds.
    """
    if not root.is_dir():
        return []
    found: list[Path] = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts):
            continue
        if path.is_symlink() or not path.is_file() or path.name.endswith(_SKIP_SUFFIXES):
            continue
        found.append(rel)
    return sorted(found, key=lambda p: p.as_posix())


def short(content_hash: str) -> str:
    """The part of a content hash used in tags."""
    return content_hash[: config.HASH_LEN]
