"""Admission control for the expensive starts of attempts: a host-wide counting lock.

Starting a service (the ERP importing its stack and building its app, the model gateway) costs
seconds of CPU. Many attempts starting at once on a small host starve each other until none is
healthy in time, so load fails instead of queueing. `StartSlots` bounds how many such starts run
at once on the whole host: a start holds one of `n` slots from the moment it is created until it
answers its health check (or fails); the others wait their turn, and the time they wait is theirs
to report (`Held.waited_s`), not part of any health deadline.

The slots are files `<root>/slot-<i>.lock` held with `flock(LOCK_EX | LOCK_NB)`, so the limit is
shared by every thread of one orchestrator *and* by every orchestrator on the host using the same
root (a flock belongs to an open file description: two descriptors conflict even in one process).
A process that dies releases its slots with its descriptors: nothing to clean up. Processes
configured with different `n` share the first min(n) slot files; each respects its own limit.
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from orchestrator.config import RuntimeConfig

_POLL_MIN_S = 0.02
_POLL_MAX_S = 0.5


class AdmissionTimeout(TimeoutError):
    """No slot became free within the caller's `timeout_s`."""


class Held:
    """One slot held (a context manager; `release()` is idempotent)."""

    def __init__(self, slots: StartSlots, index: int, fd: int, waited_s: float) -> None:
        self.slots, self.index, self.waited_s = slots, index, waited_s
        self._fd: int | None = fd

    def release(self) -> None:
        """Give the slot back (closing the descriptor drops the flock)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> Held:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


class StartSlots:
    """`n` host-wide slots under `root` (see the module docstring)."""

    def __init__(self, root: Path, n: int) -> None:
        if n < 1:
            raise ValueError(f"admission needs at least one slot, got {n}")
        self.root, self.n = Path(root), n
        self.root.mkdir(parents=True, exist_ok=True)
        # Threads of this process take turns trying the files, so one thread does not spin on
        # slots its siblings hold while others wait (fairness within the process, cheap polling).
        self._try_lock = threading.Lock()

    def _path(self, i: int) -> Path:
        return self.root / f"slot-{i}.lock"

    def try_acquire(self) -> Held | None:
        """A free slot now, or None."""
        with self._try_lock:
            for i in range(self.n):
                fd = os.open(self._path(i), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                except BaseException:
                    os.close(fd)
                    raise
                return Held(self, i, fd, 0.0)
        return None

    def acquire(self, timeout_s: float | None = None) -> Held:
        """Wait for a slot (polling with backoff); raise `AdmissionTimeout` after `timeout_s`."""
        t0 = time.monotonic()
        delay = _POLL_MIN_S
        while True:
            held = self.try_acquire()
            if held is not None:
                held.waited_s = time.monotonic() - t0
                return held
            if timeout_s is not None and time.monotonic() - t0 >= timeout_s:
                raise AdmissionTimeout(f"no start slot free of {self.n} under {self.root} within {timeout_s:g}s")
            time.sleep(delay)
            delay = min(_POLL_MAX_S, delay * 1.5)


_SHARED: dict[tuple[str, int], StartSlots] = {}
_SHARED_LOCK = threading.Lock()


def start_slots(config: RuntimeConfig) -> StartSlots:
    """The process's `StartSlots` for `config` (one object per root and size)."""
    key = (str(config.admission_root), config.start_slots)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = StartSlots(config.admission_root, config.start_slots)
        return _SHARED[key]
