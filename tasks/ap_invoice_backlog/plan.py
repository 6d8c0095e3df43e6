"""The backlog's plan: its size (the difficulty band's inputs), its calendar, and the container
that the planted cases and the routine stream fill before anything is written.

Bands (the specification's §10) are generator inputs: `Size(documents, exceptions)`. The pack's
task.yaml band picks one (`SIZES`); `plan_backlog` takes any `Size`, so a bench or a test can
build an instance of any volume. `documents` counts every message the AP inbox receives over
the episode (invoices, letters and replies); `exceptions` counts the planted exceptions: each of
the eleven kinds at least once, the rest repeats of the kinds that repeat (`cases.EXTRA_KINDS`).
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

from .documents import Doc
from .purchasing import PoPlan

#: The kinds of planted exception (each planted at least once) — the specification's table.
KINDS = ("price_variance", "quantity_overbill", "in_transit", "same_looking", "stock_tax", "nonpo_over_limit",
         "other_company", "bad_arithmetic", "printed_instruction", "resent_duplicate", "bank_email")


@dataclass(frozen=True)
class Size:
    """How big an instance is: messages over the episode, and planted exceptions."""

    documents: int
    exceptions: int

    def problems(self) -> list[str]:
        """Why this size cannot be planted (empty: it can)."""
        out = []
        if self.exceptions < len(KINDS):
            out.append(f"exceptions={self.exceptions}: every one of the {len(KINDS)} kinds is planted at least "
                       f"once, so at least {len(KINDS)}")
        if self.documents < 60:
            out.append(f"documents={self.documents}: the planted cases, the look-alikes and a routine stream "
                       f"need at least 60")
        return out


#: The three bands of the specification's §10 (documents over the episode, planted exceptions).
SIZES = {"clerical": Size(documents=80, exceptions=11), "analyst": Size(documents=200, exceptions=11),
         "controller": Size(documents=520, exceptions=22)}

#: The backlog's calendar: nobody entered an invoice after history ended; the month's purchasing
#: runs from the first workday after it; the last goods arrive on RECEIPTS_END.
FIRST_DAY, RECEIPTS_END = "2026-10-12", "2026-10-30"
#: Share of the routine documents that arrive before turn 1, before turn 2 and before turn 3.
BATCH_SHARES = (0.58, 0.22, 0.20)


def workdays(first: str, last: str) -> list[str]:
    """Monday-to-Friday dates from `first` to `last` (no company holiday falls in the backlog)."""
    d, end, out = dt.date.fromisoformat(first), dt.date.fromisoformat(last), []
    while d <= end:
        if d.weekday() < 5:
            out.append(d.isoformat())
        d += dt.timedelta(days=1)
    return out


@dataclass
class Calendar:
    """The workdays of the backlog and the three delivery windows the turns split it into."""

    start: str                        # turn 1
    turn2: str
    turn3: str
    days: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.days = workdays(FIRST_DAY, self.turn3)

    def shift(self, day: str, n: int) -> str:
        """`day` moved by `n` workdays (clamped to the calendar)."""
        i = self.days.index(day) + n
        return self.days[max(0, min(i, len(self.days) - 1))]

    def window(self, batch: int) -> list[str]:
        """Delivery days of batch 0 (before turn 1, from the second workday), 1 and 2."""
        if batch == 0:
            return [d for d in self.days if self.days[0] < d <= self.start]
        if batch == 1:
            return [d for d in self.days if self.start < d <= self.turn2]
        return [d for d in self.days if self.turn2 < d <= self.turn3]

    def before(self, day: str, limit: str) -> str:
        """`day`, or `limit` when it is later."""
        return min(day, limit)


@dataclass
class Backlog:
    """Everything the generator plants, gathered before it plays the days."""

    pos: list[PoPlan] = field(default_factory=list)
    docs: list[Doc] = field(default_factory=list)
    planted: dict[str, dict[str, Any]] = field(default_factory=dict)
    expect: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    absent: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)   # text checks' aliases (truth values)
    calls: list[dict[str, Any]] = field(default_factory=list)
    bank_requests: list[tuple[str, Doc, dict[str, Any]]] = field(default_factory=list)
    leave: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, *docs: Doc) -> None:
        self.docs.extend(docs)

    def expect_row(self, projection: str, **row: Any) -> None:
        self.expect.setdefault(projection, []).append(row)

    def absent_row(self, projection: str, **row: Any) -> None:
        self.absent.setdefault(projection, []).append(row)


def batch_quota(n: int, rng: random.Random) -> list[int]:
    """The delivery batch (0, 1, 2) of each of `n` routine documents, in a seeded order."""
    first = round(n * BATCH_SHARES[0])
    second = round(n * BATCH_SHARES[1])
    out = [0] * first + [1] * second + [2] * (n - first - second)
    rng.shuffle(out)
    return out
