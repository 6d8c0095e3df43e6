"""Phases of an attempt: each timed, each tagging what went wrong in it, and the signal handling
that lets an attempt always tear down.

    with clock.phase(Phase.FREEZE):
        ...

records `freeze_s` in the clock's timings (added up when a phase runs more than once) and, if an
exception escapes, tags it with the phase (`phase_of(exc)`), so the error record says where the
attempt failed without every raiser having to know.
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from orchestrator.errors import AttemptError, Phase
from orchestrator.logs import get_logger

log = get_logger(__name__)


def phase_of(exc: BaseException, default: Phase) -> Phase:
    """The phase an exception was tagged with (the innermost phase it escaped), else `default`."""
    tagged = getattr(exc, "attempt_phase", None)
    if isinstance(tagged, Phase):
        return tagged
    if isinstance(exc, AttemptError) and exc.phase is not None:
        return exc.phase
    return default


class PhaseClock:
    """The current phase and the time spent in each, for one attempt."""

    def __init__(self, attempt_id: str) -> None:
        self.attempt_id = attempt_id
        self.current: Phase = Phase.RESOLVE
        self.timings: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, which: Phase) -> Iterator[None]:
        """Run a block as phase `which`: timed, and any exception escaping it tagged with it."""
        self.current = which
        t0 = time.monotonic()
        log.info("phase_start", phase=which.value)
        failure: BaseException | None = None
        try:
            yield
        except BaseException as exc:
            failure = exc
            if getattr(exc, "attempt_phase", None) is None:
                with contextlib.suppress(AttributeError, TypeError):  # a few builtins refuse attributes
                    exc.attempt_phase = which  # type: ignore[attr-defined]
            if isinstance(exc, AttemptError) and exc.phase is None:
                exc.phase = which
            raise
        finally:
            elapsed = time.monotonic() - t0
            key = f"{which.value}_s"
            self.timings[key] = self.timings.get(key, 0.0) + elapsed
            if failure is None:
                log.info("phase_end", phase=which.value, duration_s=round(elapsed, 3))
            else:
                log.info("phase_failed", phase=which.value, duration_s=round(elapsed, 3), error=type(failure).__name__)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt in the main thread (so `finally` runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[list[int]]:
    """Hold SIGINT/SIGTERM while tearing down; yields a list that is non-empty if one came."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, lambda signum, _f: pending.append(signum))
    try:
        yield pending
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
