"""The period of a background poll: short while new items arrive, doubling up to a cap while a
poll finds nothing.

The attempt's streamers (the ERP's audit and fault records, the gateway's usage log) copy records to
the host as they appear. An agent waiting for its model leaves them idle for long stretches, and
one host runs dozens of attempts: at a fixed half second the idle polls (requests that wake the
service and the orchestrator) cost more CPU than the attempts' own work.
"""
from __future__ import annotations

import threading
from collections.abc import Callable


class PollBackoff:
    """`period_s` starts at `interval_s`; `after(found)` resets it when a poll found items and
    doubles it (up to `idle_max_s`) when it found none."""

    def __init__(self, interval_s: float, idle_max_s: float) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.interval_s = interval_s
        self.idle_max_s = max(interval_s, idle_max_s)
        self.period_s = interval_s

    def after(self, found: int) -> float:
        """The period before the next poll, given how many new items this one found."""
        self.period_s = self.interval_s if found else min(self.idle_max_s, self.period_s * 2)
        return self.period_s

    def run(self, stop: threading.Event, pull: Callable[[], int], *,
            failed: tuple[type[Exception], ...], on_failure: Callable[[Exception], None]) -> None:
        """Call `pull` (it returns how many new items it found) until `stop` is set, waiting
        `period_s` before each call. A pull that raises one of `failed` is handed to
        `on_failure` and counts as finding nothing; the next tick tries again."""
        while not stop.wait(self.period_s):
            try:
                found = pull()
            except failed as exc:
                on_failure(exc)
                found = 0
            self.after(found)
