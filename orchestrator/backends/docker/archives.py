"""Tar streams in and out of containers, built and unpacked without trusting their content.

The workspace comes back from a container the agent controlled: it may hold symlinks to host
paths, `..` names, device files or hard links. `safe_extract` writes only regular files and
folders, under `dest`, with fixed permissions, and never follows or creates a link.
"""
from __future__ import annotations

import io
import os
import tarfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO


@dataclass(frozen=True)
class Entry:
    """One member of a tar built for a container (`data` None = a folder)."""

    name: str
    data: bytes | None = None
    uid: int = 0
    gid: int = 0
    mode: int = 0o644


def build_tar(entries: Iterable[Entry]) -> bytes:
    """A tar archive (bytes) of `entries`, with the given owners and modes."""
    buf = io.BytesIO()
    now = int(time.time())
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for e in entries:
            info = tarfile.TarInfo(e.name)
            info.uid, info.gid, info.mode, info.mtime = e.uid, e.gid, e.mode, now
            if e.data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(e.data)
                tar.addfile(info, io.BytesIO(e.data))
    return buf.getvalue()


def _raise(exc: OSError) -> None:
    raise exc


def tree_entries(src: Path, prefix: str, *, uid: int, gid: int) -> Iterator[Entry]:
    """Entries for a host folder (regular files and folders; host symlinks are not followed).

    Raises OSError when `src` is not a folder or a folder of it cannot be listed: os.walk alone
    yields nothing for a missing folder and skips one it cannot list (EMFILE under load), and an
    empty handbook copied into a workspace fails the agent's turn, not the runtime."""
    if not Path(src).is_dir():
        raise FileNotFoundError(f"{src}: no such folder to copy")
    yield Entry(prefix, None, uid, gid, 0o755)
    for root, dirs, files in os.walk(src, followlinks=False, onerror=_raise):
        dirs.sort()
        rel = Path(root).relative_to(src)
        for d in dirs:
            if not (Path(root) / d).is_symlink():
                yield Entry(str(PurePosixPath(prefix, rel, d)), None, uid, gid, 0o755)
        for f in sorted(files):
            p = Path(root) / f
            if p.is_file() and not p.is_symlink():
                yield Entry(str(PurePosixPath(prefix, rel, f)), p.read_bytes(), uid, gid, 0o644)


class _StreamReader(io.RawIOBase):
    """A file object over an iterator of byte chunks (the engine's archive stream)."""

    def __init__(self, chunks: Iterable[bytes]):
        self._it = iter(chunks)
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._buf:
            try:
                self._buf = next(self._it)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def stream_file(chunks: Iterable[bytes]) -> IO[bytes]:
    """Wrap an iterator of chunks as a buffered binary file."""
    return io.BufferedReader(_StreamReader(chunks), buffer_size=1 << 16)


def _clean_parts(name: str, strip: int) -> tuple[str, ...] | None:
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if any(p == ".." for p in parts) or name.startswith("/"):
        return None
    parts = parts[strip:]
    return tuple(parts) if parts else ()


def safe_extract(fileobj: IO[bytes], dest: Path, *, strip: int = 1, max_bytes: int = 2 * 2**30) -> list[str]:
    """Unpack a tar stream into `dest`; return the names skipped (links, devices, unsafe names)
    or cut short (past the size limit).

    `strip` drops leading path components (the engine's archive of /workspace starts with
    `workspace/`). Files are written with mode 0644, folders 0755; a path whose parent would be
    a non-folder is skipped. At most `max_bytes` of file content is written: the file that
    crosses the limit is truncated there and every later file is skipped, each recorded in the
    list. The agent decides what is in the archive, so its size is never an error of ours.
    """
    dest.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    total = 0
    with tarfile.open(fileobj=fileobj, mode="r|") as tar:
        for member in tar:
            parts = _clean_parts(member.name, strip)
            if parts is None:
                skipped.append(f"{member.name} (unsafe name)")
                continue
            if not parts:
                continue  # the stripped root itself
            target = dest.joinpath(*parts)
            # Never write through something that is not a plain folder we created.
            parent_ok = all(
                (dest.joinpath(*parts[:i]).is_dir() and not dest.joinpath(*parts[:i]).is_symlink())
                for i in range(1, len(parts))
            )
            if not parent_ok:
                skipped.append(f"{member.name} (parent is not a folder)")
                continue
            if member.isdir():
                if target.is_symlink() or (target.exists() and not target.is_dir()):
                    skipped.append(f"{member.name} (clashes)")
                    continue
                target.mkdir(exist_ok=True)
                os.chmod(target, 0o755)
            elif member.isreg():
                room = max_bytes - total
                if room <= 0:
                    skipped.append(f"{member.name} ({member.size} bytes; over the copy-out limit of {max_bytes} bytes)")
                    continue
                src = tar.extractfile(member)
                if target.is_symlink() or target.is_dir():
                    skipped.append(f"{member.name} (clashes)")
                    continue
                keep = min(member.size, room)
                total += keep
                with open(target, "wb") as out:
                    left = keep
                    while left > 0 and (chunk := src.read(min(1 << 16, left))):  # type: ignore[union-attr]
                        out.write(chunk)
                        left -= len(chunk)
                os.chmod(target, 0o644)
                if keep < member.size:
                    skipped.append(f"{member.name} (truncated at {keep} of {member.size} bytes: "
                                   f"the copy-out limit of {max_bytes} bytes)")
            else:
                kind = "symlink" if member.issym() else "hard link" if member.islnk() else "special file"
                link = f" -> {member.linkname}" if member.issym() or member.islnk() else ""
                skipped.append(f"{member.name} ({kind}{link})")
    return skipped
