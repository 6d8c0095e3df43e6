"""How long an attempt waited for the provider's capacity, per turn.

A turn's provider wait is the wall time during which at least one of the attempt's calls was
waiting for capacity (queued at the limiter, or sleeping out a 429's Retry-After) and none of its
calls was being served by the provider. Parallel calls waiting together count once, and an agent
that floods the gateway gains nothing while its own calls are being answered: the clock only
runs when the attempt is held back, never when it is busy. This is the time the turn's budget is
extended by (orchestrator.attempt.runner), and what the report shows.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable


class WaitClock:
    """Counts waiting and served calls; accrues blocked time to the current turn."""

    def __init__(self, turn: Callable[[], int | None], clock: Callable[[], float] = time.monotonic) -> None:
        self._turn = turn
        self._clock = clock
        self._lock = threading.Lock()
        self.waiting = 0
        self.serving = 0
        self._since = clock()
        self.by_turn: dict[int | None, float] = {}

    def _accrue(self) -> None:
        now = self._clock()
        if self.waiting > 0 and self.serving == 0:
            turn = self._turn()
            self.by_turn[turn] = self.by_turn.get(turn, 0.0) + (now - self._since)
        self._since = now

    def change(self, *, waiting: int = 0, serving: int = 0) -> None:
        """A call started (+1) or stopped (-1) waiting or being served."""
        with self._lock:
            self._accrue()
            self.waiting += waiting
            self.serving += serving

    def wait_s(self, turn: int | None) -> float:
        """The provider wait of `turn` so far (the running stretch included)."""
        with self._lock:
            self._accrue()
            return round(self.by_turn.get(turn, 0.0), 6)
