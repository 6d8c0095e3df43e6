"""Sealed seeds (issue 39, item 2): drawn from a private range by the user's secret, committed to
without showing them, and revealed: the right secret gives the committed seeds, any other fails."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from orchestrator.study.seeds import (
    DEFAULT_RANGE,
    SealedSeedError,
    commitment,
    draw_seeds,
    new_secret_file,
    read_secret,
    record_seeds,
    reveal_seeds,
    sealed_block,
)

SECRET = "ab" * 32
OTHER = "cd" * 32


def test_seeds_are_distinct_in_range_and_deterministic() -> None:
    seeds = draw_seeds(SECRET, DEFAULT_RANGE, 20)
    assert seeds == draw_seeds(SECRET, DEFAULT_RANGE, 20) == sorted(seeds)
    assert len(set(seeds)) == 20 and all(DEFAULT_RANGE[0] <= s < DEFAULT_RANGE[1] for s in seeds)
    assert draw_seeds(OTHER, DEFAULT_RANGE, 20) != seeds


def test_avoided_seeds_are_never_drawn() -> None:
    seeds = draw_seeds(SECRET, (0, 40), 10)
    again = draw_seeds(SECRET, (0, 40), 10, avoid=seeds[:5])
    assert not set(again) & set(seeds[:5]) and len(again) == 10


def test_the_block_holds_no_seed_and_no_secret() -> None:
    block = sealed_block(SECRET, DEFAULT_RANGE, 5)
    text = repr(block)
    assert SECRET not in text
    assert not any(str(s) in text for s in draw_seeds(SECRET, DEFAULT_RANGE, 5))
    assert block["commitment"] == commitment(SECRET, DEFAULT_RANGE, 5)


@pytest.mark.parametrize("secret, ok", [
    (SECRET, True),
    (OTHER, False),                       # another secret
    (SECRET[:-1] + "0", False),           # one digit off
    ("AB" * 32, False),                   # not the scheme's form
    ("ab" * 31, False),                   # too short
    ("", False),
])
def test_reveal_accepts_only_the_committed_secret(secret: str, ok: bool) -> None:
    block = sealed_block(SECRET, DEFAULT_RANGE, 3)
    if ok:
        assert reveal_seeds(block, secret) == draw_seeds(SECRET, DEFAULT_RANGE, 3)
    else:
        with pytest.raises(SealedSeedError):
            reveal_seeds(block, secret)


@pytest.mark.parametrize("field, value", [("count", 4), ("range", [1_000_000, 3_000_000]), ("scheme", "other/1")])
def test_a_block_changed_after_the_fact_fails_the_reveal(field: str, value) -> None:
    """The commitment binds the range and the count: declaring 3 and revealing 4 seeds fails."""
    block = sealed_block(SECRET, DEFAULT_RANGE, 3)
    block[field] = value
    with pytest.raises(SealedSeedError):
        reveal_seeds(block, SECRET)


def test_secret_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    secret = new_secret_file(path)
    assert read_secret(path) == secret
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(FileExistsError):
        new_secret_file(path)


def test_a_validation_record_lists_its_seeds() -> None:
    record = {"seeds": [0, 1], "entries": [{"seed": 4}, {"seed": None}, {"seed": 2}]}
    assert record_seeds(record) == {0, 1, 2, 4}


@pytest.mark.parametrize("count, rng", [(0, DEFAULT_RANGE), (11, (0, 20)), (1, (5, 5)), (1, (-1, 10))])
def test_impossible_draws_are_refused(count: int, rng: tuple[int, int]) -> None:
    with pytest.raises(SealedSeedError):
        draw_seeds(SECRET, rng, count)
