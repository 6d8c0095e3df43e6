"""Separate concurrency limits for the engine-heavy phases of attempts.

With many attempts in flight, the expensive Docker calls come in bursts: creating networks and
volumes and starting the ERP (setup), and removing everything (teardown). Bounding them with one
shared limit would let a burst of setups starve teardowns, so objects pile up; bounding them
separately keeps teardown progressing whatever setups are queued. Image builds happen once,
before any attempt starts (`Backend.ensure_prepared()` in the main thread), so they never compete.

The limits wrap the runtime's backend and sandboxes (a proxy), so the attempt lifecycle itself is
unchanged: `open_attempt` and `start_service` hold a setup slot, `close` holds a teardown slot.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class EngineLimits:
    """The semaphores, and how long attempts waited on them (for the throughput bench)."""

    setup_slots: int
    teardown_slots: int
    # A teardown that takes longer is left to finish in the background (its objects carry the
    # owner labels, so `orchestrate reap` removes them if it never does) and the attempt moves on.
    teardown_timeout_s: float = 300.0
    setup: threading.BoundedSemaphore = field(init=False)
    teardown: threading.BoundedSemaphore = field(init=False)
    waited_s: dict[str, float] = field(default_factory=lambda: {"setup": 0.0, "teardown": 0.0})
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.setup_slots < 1 or self.teardown_slots < 1:
            raise ValueError("engine limits need at least one slot each")
        self.setup = threading.BoundedSemaphore(self.setup_slots)
        self.teardown = threading.BoundedSemaphore(self.teardown_slots)

    @classmethod
    def for_concurrency(cls, concurrency: int) -> EngineLimits:
        """Setup bursts capped at 4 (the engine serialises network creation anyway); teardown
        gets as many slots as attempts in flight, so it never waits behind anything."""
        return cls(setup_slots=max(1, min(concurrency, 4)), teardown_slots=max(1, concurrency))

    def hold(self, which: str) -> _Held:
        """Context manager holding one slot of `which` ("setup" or "teardown")."""
        return _Held(self, which)

    def as_dict(self) -> dict[str, Any]:
        return {"setup_slots": self.setup_slots, "teardown_slots": self.teardown_slots}


class _Held:
    def __init__(self, limits: EngineLimits, which: str) -> None:
        self.limits, self.which = limits, which
        self.sem: threading.BoundedSemaphore = getattr(limits, which)

    def __enter__(self) -> None:
        t = time.monotonic()
        self.sem.acquire()
        with self.limits._lock:
            self.limits.waited_s[self.which] += time.monotonic() - t

    def __exit__(self, *exc: Any) -> None:
        self.sem.release()


class LimitedSandbox:
    """A runtime sandbox whose setup and teardown calls hold the campaign's slots."""

    def __init__(self, inner: Any, limits: EngineLimits) -> None:
        self._inner = inner
        self._limits = limits

    def start_service(self, spec: Any) -> Any:
        with self._limits.hold("setup"):
            return self._inner.start_service(spec)

    def close(self) -> list[str]:
        """Tear down within the teardown limit and the teardown timeout."""
        with self._limits.hold("teardown"):
            box: dict[str, Any] = {}

            def work() -> None:
                try:
                    box["problems"] = self._inner.close()
                except Exception as exc:  # close() should not raise; record it if it does
                    box["problems"] = [f"close raised {exc!r}"]

            worker = threading.Thread(target=work, name="teardown", daemon=True)
            worker.start()
            worker.join(self._limits.teardown_timeout_s)
            if worker.is_alive():
                return [
                    f"teardown still running after {self._limits.teardown_timeout_s:g}s; left to finish in the "
                    "background (`orchestrate reap` removes what a dead run leaves)"
                ]
            return list(box.get("problems") or [])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class LimitedBackend:
    """A runtime backend whose `open_attempt` holds a setup slot and returns limited sandboxes."""

    def __init__(self, inner: Any, limits: EngineLimits) -> None:
        self._inner = inner
        self.limits = limits

    def open_attempt(self, ctx: Any) -> LimitedSandbox:
        with self.limits.hold("setup"):
            sandbox = self._inner.open_attempt(ctx)
        return LimitedSandbox(sandbox, self.limits)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
