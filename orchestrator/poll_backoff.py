"""The period of a background poll: short while new items arrive, doubling up to a cap while a
poll finds nothing.

The attempt's streamers (the ERP's audit and fault records, the gateway's ledger) copy records to
the host as they appear. An agent waiting for its model leaves them idle for long stretches, and
one host runs dozens of attempts: at a fixed half second the idle polls (requests that wake the
service and the orchestrator) cost more CPU than the attempts' own work.
"""
from __future__ import annotations


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
