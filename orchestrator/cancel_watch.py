"""Let a cancel reach a blocking wait: while the wait runs, a helper thread watches the event.

A turn waits for its container or process for up to its whole budget (20 minutes by default);
the campaign's stop (SIGINT/SIGTERM) sets a `threading.Event` the wait itself never looks at.
`CancelWatch` runs `on_cancel` (stop the container, kill the process group) as soon as the event
is set, so the wait returns within seconds and the attempt tears down.

    with CancelWatch(turn.cancel, lambda: container.stop(timeout=2)) as watch:
        container.wait(timeout=budget)
    if watch.fired: ...   # the turn was cut short by the cancel, not by its budget
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

from orchestrator.logs import get_logger

log = get_logger(__name__)

# How often the helper looks at the event: the delay a cancel adds before `on_cancel` runs.
POLL_S = 0.2


class CancelWatch:
    """Context manager: call `on_cancel` once if `cancel` is set while the block runs."""

    def __init__(self, cancel: threading.Event | None, on_cancel: Callable[[], object], *, poll_s: float = POLL_S):
        self.cancel, self.on_cancel, self.poll_s = cancel, on_cancel, poll_s
        self.fired = False
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def _watch(self) -> None:
        assert self.cancel is not None
        while not self._done.is_set():
            if self.cancel.wait(self.poll_s):
                if self._done.is_set():
                    return
                self.fired = True
                try:
                    self.on_cancel()
                except Exception as exc:  # noqa: BLE001 — the wait's own error handling decides; keep it
                    self.error = exc
                    log.warning("cancel_wait_failed", error=str(exc))
                return

    def __enter__(self) -> CancelWatch:
        if self.cancel is not None:
            self._thread = threading.Thread(target=self._watch, name="cancel-watch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()  # on_cancel, if it started, finishes before the caller goes on
