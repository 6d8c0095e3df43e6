"""SIGINT/SIGTERM for the commands that run attempts (campaign, validate).

The first signal asks the command to stop: nothing new starts, attempts in flight are cancelled
at their next phase or turn boundary and tear down, so the engine is left holding nothing. A
second signal exits at once (`orchestrate reap` then removes what is left)."""
from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any


def install_stop_signals(stop: Callable[[], None], notice: Callable[[str], None]) -> Callable[[], None]:
    """Route SIGINT/SIGTERM to `stop` (first) and KeyboardInterrupt (second); `notice` is told
    once what happens. Returns the function that restores the previous handlers."""
    hits = {"n": 0}

    def handler(signum: int, frame: Any) -> None:
        hits["n"] += 1
        if hits["n"] == 1:
            notice(f"{signal.Signals(signum).name}: nothing new starts; attempts in flight are cancelled and torn "
                   "down (signal again to exit at once; `orchestrate reap` cleans up)")
            stop()
        else:
            raise KeyboardInterrupt

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore
