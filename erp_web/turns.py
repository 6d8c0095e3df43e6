"""The turn a person is working (human baseline mode), shared by the host and the browser.

The host (the attempt runner) opens a turn with its request and budget and polls for its end;
the person ends it with the "End turn" button, or the budget ends it. While no turn is open the
UI shows a waiting page and sends nothing to the ERP: between turns the clock advances and
counterparties act, as they do between an agent's turns.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Turn:
    """One turn as the person sees it."""

    n: int
    of: int
    date: str
    request: str
    from_name: str
    budget_s: float
    opened_at: float  # time.monotonic()
    ended_by: str | None = None  # person | budget | host
    ended_at: float | None = None

    def remaining_s(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return max(0.0, self.budget_s - (now - self.opened_at))

    @property
    def open(self) -> bool:
        return self.ended_by is None


class TurnBoard:
    """The current turn, if any, behind a lock (requests are served from a thread pool)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled  # False: no turns (debug profile); the UI is always usable
        self._lock = threading.Lock()
        self._turn: Turn | None = None
        self.finished = False  # the attempt has no more turns

    def open_turn(self, n: int, of: int, date: str, request: str, from_name: str, budget_s: float) -> Turn:
        """Start turn `n`; a previous open turn is closed by the host."""
        with self._lock:
            if self._turn is not None and self._turn.open:
                self._turn.ended_by, self._turn.ended_at = "host", time.monotonic()
            self._turn = Turn(n, of, date, request, from_name, float(budget_s), time.monotonic())
            self.finished = False
            return self._turn

    def current(self) -> Turn | None:
        """The open turn (closing it first if its budget ran out), else None."""
        with self._lock:
            turn = self._turn
            if turn is not None and turn.open and turn.remaining_s() <= 0:
                turn.ended_by, turn.ended_at = "budget", time.monotonic()
            return turn if turn is not None and turn.open else None

    def end(self, n: int, by: str) -> bool:
        """End turn `n` (the person's button, or the host); False when it was not open."""
        with self._lock:
            turn = self._turn
            if turn is None or turn.n != n or not turn.open:
                return False
            turn.ended_by, turn.ended_at = by, time.monotonic()
            return True

    def finish(self) -> None:
        """No more turns: the UI says the attempt is over."""
        with self._lock:
            if self._turn is not None and self._turn.open:
                self._turn.ended_by, self._turn.ended_at = "host", time.monotonic()
            self.finished = True

    def allows_work(self) -> bool:
        """Whether the person may use the ERP now."""
        return not self.enabled or self.current() is not None

    def state(self) -> dict[str, Any]:
        """What the host polls: the last turn and how it ended."""
        self.current()  # closes a turn whose budget ran out
        with self._lock:
            t = self._turn
            if t is None:
                return {"turn": None, "finished": self.finished}
            used = (t.ended_at or time.monotonic()) - t.opened_at
            return {"turn": t.n, "open": t.open, "ended_by": t.ended_by, "remaining_s": round(t.remaining_s(), 1),
                    "used_s": round(used, 3), "finished": self.finished}
