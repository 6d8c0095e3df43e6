"""Sealed seeds (issue 39, item 2): held-out seeds a reader can check were fixed in advance.

The user keeps a secret (32 random bytes, hex, in a file of mode 0600). The seeds are drawn from
it with HMAC-SHA256 in a private range, far from the small integers used in development; only a
commitment — an HMAC of the secret over the scheme, the range and the count — goes into the
study declaration. After the campaign the secret is revealed (the publication bundle carries it);
whoever holds the declaration recomputes the commitment and the seeds from it, and checks that
they are the seeds the campaign used. A wrong secret fails the commitment; a right one with other
seeds in the campaign fails the comparison.

Why HMAC and not a hash of the seeds: with a 256-bit secret the commitment hides the seeds (nobody
can try every seed of the range against it) and binds them (another secret with the same
commitment is a collision of HMAC-SHA256).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCHEME = "pb-sealed-seeds/hmac-sha256/1"
DEFAULT_RANGE = (1_000_000, 2_000_000_000)  # private: no development or validation seed is this large
SECRET_BYTES = 32


class SealedSeedError(ValueError):
    """A secret, range or reveal that cannot be used (the message says why)."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure


def new_secret_file(path: Path) -> str:
    """Create `path` holding a fresh secret (refuses to overwrite one); returns the secret."""
    secret = secrets.token_hex(SECRET_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    return secret


def read_secret(path: Path) -> str:
    """The secret in `path` (64 hex digits)."""
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise SealedSeedError(f"cannot read the seed secret {path}: {exc.strerror}") from None
    return check_secret(text, str(path))


def check_secret(text: str, where: str = "the secret") -> str:
    """`text` if it is a secret of this scheme (64 hex digits), else `SealedSeedError`."""
    if len(text) != 2 * SECRET_BYTES or any(c not in "0123456789abcdef" for c in text):
        raise SealedSeedError(f"{where}: not a sealed-seed secret (64 lowercase hex digits)")
    return text


def _mac(secret: str, message: str) -> bytes:
    return hmac.new(bytes.fromhex(secret), message.encode(), hashlib.sha256).digest()


def commitment(secret: str, seed_range: tuple[int, int], count: int) -> str:
    """The value the declaration publishes: binds the secret, the range and the count."""
    lo, hi = seed_range
    return _mac(secret, f"{SCHEME}:commitment:{lo}:{hi}:{count}").hex()


def draw_seeds(secret: str, seed_range: tuple[int, int], count: int, avoid: Iterable[int] = ()) -> list[int]:
    """`count` distinct seeds in [lo, hi), drawn from the secret, none of `avoid` (sorted)."""
    lo, hi = seed_range
    if not 0 <= lo < hi or count < 1 or count > (hi - lo) // 2:
        raise SealedSeedError(f"cannot draw {count} seed(s) from the range [{lo}, {hi})")
    avoid_set = set(avoid)
    out: list[int] = []
    i = 0
    while len(out) < count:
        value = lo + int.from_bytes(_mac(secret, f"{SCHEME}:seed:{i}")[:8], "big") % (hi - lo)
        i += 1
        if value not in out and value not in avoid_set:
            out.append(value)
    return sorted(out)


def sealed_block(secret: str, seed_range: tuple[int, int], count: int) -> dict[str, Any]:
    """The declaration's `sealed_seeds` block (no seed, no secret in it)."""
    return {"scheme": SCHEME, "range": [seed_range[0], seed_range[1]], "count": count,
            "commitment": commitment(secret, seed_range, count)}


def reveal_seeds(block: dict[str, Any], secret: str, public: Iterable[int] = ()) -> list[int]:
    """The sealed seeds of a declaration's `block`, from a revealed secret; `SealedSeedError`
    when the secret is not the committed one."""
    if block.get("scheme") != SCHEME:
        raise SealedSeedError(f"unknown sealed-seed scheme {block.get('scheme')!r}")
    check_secret(secret, "the revealed secret")
    seed_range = (int(block["range"][0]), int(block["range"][1]))
    count = int(block["count"])
    if not hmac.compare_digest(commitment(secret, seed_range, count), str(block.get("commitment"))):
        raise SealedSeedError("the revealed secret does not match the declaration's commitment")
    return draw_seeds(secret, seed_range, count, avoid=public)


def record_seeds(record: dict[str, Any]) -> set[int]:
    """The seeds a validation record (orchestrator/validation_record.py) used: its `seeds` when it
    lists them, and the seed of every entry."""
    out = {int(s) for s in record.get("seeds") or [] if isinstance(s, int)}
    for entry in record.get("entries") or []:
        if isinstance(entry, dict) and isinstance(entry.get("seed"), int):
            out.add(int(entry["seed"]))
    return out
