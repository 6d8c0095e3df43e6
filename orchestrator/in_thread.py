"""Work started in a thread now and waited for where its result is first needed (the agent
side's containers started while the ERP starts, a turn's removals done while the next step
runs, the services stopping while the workspace is copied out)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from orchestrator.errors import Phase


class InThread:
    """`wait()` blocks until the work is done and re-raises what it raised in the caller's
    thread — tagged with `phase` when one is given (the phase the work belongs to, so the
    attempt's record names it rather than the phase that happened to wait); a second `wait()`
    raises nothing. `result` is what the work returned."""

    def __init__(self, name: str, work: Callable[[], Any], phase: Phase | None = None) -> None:
        self.phase = phase
        self.result: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work,), name=name, daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            self.result = work()
        except BaseException as exc:  # noqa: BLE001 — handed to whoever waits
            self._error = exc

    def wait(self) -> None:
        """Block until the work is done; raise its exception (once)."""
        self._thread.join()
        exc, self._error = self._error, None
        if exc is None:
            return
        if self.phase is not None and getattr(exc, "attempt_phase", None) is None:
            try:
                exc.attempt_phase = self.phase  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
        raise exc

    def settle(self) -> str | None:
        """Block until the work is done; what it raised as text (teardown reports, never raises)."""
        try:
            self.wait()
        except Exception as exc:  # noqa: BLE001 — teardown goes on
            return f"{self._thread.name}: {type(exc).__name__}: {exc}"
        return None
