"""The campaign's engine limits: setup and teardown are bounded separately, teardown has a timeout."""
from __future__ import annotations

import threading
import time

from orchestrator.campaign.limits import EngineLimits, LimitedBackend


class _Sandbox:
    def __init__(self, log, hang=0.0):
        self.log, self.hang = log, hang

    def start_service(self, spec):
        return "endpoints"

    def close(self):
        time.sleep(self.hang)
        self.log.append("closed")
        return []


class _Backend:
    name, isolation = "fake", "none"

    def __init__(self, hang=0.0):
        self.log, self.hang = [], hang
        self.active = self.peak = 0
        self.lock = threading.Lock()

    def open_attempt(self, ctx):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.05)
        with self.lock:
            self.active -= 1
        return _Sandbox(self.log, self.hang)


def test_setup_is_bounded_and_teardown_is_not_starved():
    inner = _Backend()
    backend = LimitedBackend(inner, EngineLimits(setup_slots=2, teardown_slots=4))
    assert backend.isolation == "none"  # everything else is the runtime's backend
    # hold both setup slots elsewhere: teardown must still go through
    limits = backend.limits
    limits.setup.acquire()
    sandboxes = []
    t = threading.Thread(target=lambda: sandboxes.append(backend.open_attempt(None)))
    t.start()
    t.join()
    limits.setup.acquire()
    try:
        assert sandboxes[0].close() == [] and inner.log == ["closed"]
    finally:
        limits.setup.release()
        limits.setup.release()
    threads = [threading.Thread(target=backend.open_attempt, args=(None,)) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert inner.peak == 2


def test_teardown_timeout_moves_on_and_says_so():
    backend = LimitedBackend(_Backend(hang=1.0), EngineLimits(setup_slots=1, teardown_slots=1, teardown_timeout_s=0.1))
    sandbox = backend.open_attempt(None)
    assert sandbox.start_service(None) == "endpoints"
    t = time.monotonic()
    problems = sandbox.close()
    assert time.monotonic() - t < 0.8
    assert problems and "still running" in problems[0]
    assert EngineLimits.for_concurrency(8).as_dict() == {"setup_slots": 4, "teardown_slots": 8}
