"""Admission of service starts and health waits that measure progress (issue 20, item 3).

- `StartSlots` is a counting lock shared across processes: a slot held by another process is not
  free here, a waiter gets it once that process lets go (or dies), and threads of one process
  never hold more than `n` at once.
- On the local backend (real processes, real HTTP): a start queued behind a held slot records
  the time it waited and still gets its full health window; a service that exits at once fails
  fast with its exit code; one that is busy (CPU time growing) for longer than the no-progress
  window still becomes healthy; one that hangs without progress fails with what was seen.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT

from orchestrator.admission import AdmissionTimeout, StartSlots
from orchestrator.backends.base import AttemptContext, Sandbox
from orchestrator.backends.local import LocalBackend
from orchestrator.backends.services import HealthCheck, Listener, ServiceSpec
from orchestrator.cells import Cell
from orchestrator.config import RuntimeConfig
from orchestrator.errors import ServiceUnhealthy
from orchestrator.identity import AttemptIdentity
from orchestrator.paths import AttemptPaths

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from orchestrator.admission import StartSlots
    slots = StartSlots(Path(sys.argv[1]), int(sys.argv[2]))
    held = [slots.acquire(timeout_s=30) for _ in range(int(sys.argv[3]))]
    print("held", *[h.index for h in held], flush=True)
    sys.stdin.readline()  # hold until told (or killed)
    """
)


def _holder(root: Path, n: int, count: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(n), str(count)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("held"), line
    return proc


def test_a_slot_held_by_another_process_is_not_free_until_it_lets_go(tmp_path: Path):
    root = tmp_path / "slots"
    other = _holder(root, 2, 1)
    try:
        slots = StartSlots(root, 2)
        mine = slots.try_acquire()
        assert mine is not None  # one of two is still free
        assert slots.try_acquire() is None  # the other process holds the second
        with pytest.raises(AdmissionTimeout):
            slots.acquire(timeout_s=0.3)
        assert other.stdin is not None
        threading.Timer(0.5, lambda: (other.stdin.write("\n"), other.stdin.flush())).start()  # type: ignore[union-attr]
        t0 = time.monotonic()
        second = slots.acquire(timeout_s=20)
        assert time.monotonic() - t0 >= 0.4 and second.waited_s >= 0.4
        assert {mine.index, second.index} == {0, 1}
        mine.release()
        second.release()
        mine.release()  # idempotent
    finally:
        other.kill()
        other.wait(10)


def test_a_killed_holder_releases_its_slots(tmp_path: Path):
    root = tmp_path / "slots"
    other = _holder(root, 1, 1)
    slots = StartSlots(root, 1)
    assert slots.try_acquire() is None
    other.kill()
    other.wait(10)
    with slots.acquire(timeout_s=10) as held:
        assert held.held and held.index == 0
    assert not held.held


def test_threads_of_one_process_never_hold_more_than_n(tmp_path: Path):
    slots = StartSlots(tmp_path / "slots", 2)
    inside, peak, lock = [0], [0], threading.Lock()

    def work() -> None:
        with slots.acquire(timeout_s=30):
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.1)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert peak[0] == 2


def test_zero_slots_is_refused(tmp_path: Path):
    with pytest.raises(ValueError):
        StartSlots(tmp_path, 0)
    with pytest.raises(ValueError):
        RuntimeConfig(start_slots=0)


# -- the local backend: real processes -------------------------------------------------------------

# Serves /health after `delay` seconds of either busy work (CPU time grows) or idle sleep.
SLOW = textwrap.dedent(
    """
    import http.server, json, sys, time
    bind, mode, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    host, port = bind.rsplit(":", 1)
    server = http.server.ThreadingHTTPServer((host, int(port)), http.server.BaseHTTPRequestHandler)
    print(json.dumps({"event": "ready", "api": "http://%s:%d" % (host, server.server_address[1])}), flush=True)
    end = time.monotonic() + delay
    while mode == "busy" and time.monotonic() < end:
        sum(range(10000))
    if mode == "idle":
        time.sleep(delay)  # one sleep: no CPU time at all, no output

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"{}")
        def log_message(self, *a):
            pass

    server.RequestHandlerClass = Handler
    server.serve_forever()
    """
)


def _spec(name: str, command: tuple[str, ...], *, stall_s: float, cap_s: float = 120.0) -> ServiceSpec:
    return ServiceSpec(
        name=name,
        command=command,
        listeners=(Listener("api", "control", 8090),),
        ready_line=True,
        ready_timeout_s=stall_s,
        health=HealthCheck("api", "/health", timeout_s=stall_s, max_wait_s=cap_s),
        stop_timeout_s=2,
    )


@pytest.fixture()
def local(tmp_path: Path) -> Iterator[tuple[Sandbox, RuntimeConfig]]:
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch",
                                 admission_root=tmp_path / "slots", start_slots=1, campaign="adm-test")
    attempt_id = f"adm-{uuid.uuid4().hex[:8]}"
    paths = AttemptPaths.for_identity(cfg.runs_root, attempt_id, AttemptIdentity.of(Cell("null", "fake"), 0, 1, 1))
    paths.prepare()
    sb = LocalBackend(cfg).open_attempt(AttemptContext(attempt_id, cfg.campaign, paths))
    try:
        yield sb, cfg
    finally:
        assert sb.close() == []
        # every slot given back: the host's only slot is free again
        assert StartSlots(cfg.admission_root, 1).try_acquire() is not None


def test_a_queued_start_records_its_wait_and_keeps_its_health_window(local):
    sb, cfg = local
    blocker = StartSlots(cfg.admission_root, 1).acquire(timeout_s=5)  # another attempt's start
    threading.Timer(1.5, blocker.release).start()
    spec = _spec("slow", ("{python}", "-c", SLOW, "{bind:api}", "idle", "0.5"), stall_s=3)
    t0 = time.monotonic()
    sb.start_service(spec)
    assert sb.queued_s["slow"] >= 1.3  # it waited for the slot ...
    sb.wait_service_healthy("slow")  # ... and that wait was not taken from its 3 s window
    assert time.monotonic() - t0 >= 1.8


@pytest.mark.timeout(90)
def test_starts_of_one_sandbox_share_its_slot_instead_of_waiting_for_themselves(local):
    # An attempt starts the ERP, a fake provider and the gateway before waiting on some of
    # them; with the host's only slot held by its own first start, the second must not queue
    # behind it (that was a deadlock on a 2-slot CI machine).
    # (In this thread: the local backend ties a service to the thread that started it. A
    # regression blocks here until the test's timeout.)
    sb, cfg = local
    sb.start_service(_spec("first", ("{python}", "-c", SLOW, "{bind:api}", "idle", "0.2"), stall_s=30))
    sb.start_service(_spec("second", ("{python}", "-c", SLOW, "{bind:api}", "idle", "0.2"), stall_s=30))
    assert sb.queued_s["second"] == 0.0
    other = StartSlots(cfg.admission_root, 1)
    sb.wait_service_healthy("first")
    assert other.try_acquire() is None  # still held: "second" has not finished its health wait
    sb.wait_service_healthy("second")
    freed = other.try_acquire()
    assert freed is not None  # the last wait gives the shared slot back
    freed.release()


def test_a_service_that_exits_at_once_fails_fast_with_its_exit(local):
    sb, _ = local
    crash = ("{python}", "-c", "import sys; print('no config', file=sys.stderr); sys.exit(7)", "{bind:api}")
    t0 = time.monotonic()
    with pytest.raises(ServiceUnhealthy) as info:
        sb.start_service(_spec("crashy", crash, stall_s=60))
        sb.wait_service_healthy("crashy")
    assert time.monotonic() - t0 < 15  # not the 60 s window
    pm = info.value.post_mortems[0]
    assert pm.exit_code == 7 and "no config" in pm.last_logs
    assert "exited 7" in str(info.value) or "exit 7" in str(info.value)


def test_a_busy_start_outlasts_the_no_progress_window(local):
    sb, _ = local
    spec = _spec("busy", ("{python}", "-c", SLOW, "{bind:api}", "busy", "4"), stall_s=1.5)
    sb.start_service(spec)
    t0 = time.monotonic()
    sb.wait_service_healthy("busy")  # CPU time grows all along: it may take longer than 1.5 s
    assert time.monotonic() - t0 >= 2.0


def test_a_hung_start_fails_after_the_no_progress_window_saying_what_it_saw(local):
    sb, _ = local
    spec = _spec("hung", ("{python}", "-c", SLOW, "{bind:api}", "idle", "600"), stall_s=2)
    sb.start_service(spec)
    t0 = time.monotonic()
    with pytest.raises(ServiceUnhealthy) as info:
        sb.wait_service_healthy("hung")
    assert time.monotonic() - t0 < 20
    msg = str(info.value)
    assert "no progress for" in msg and "cpu_s" in msg and "log_bytes" in msg, msg


def test_a_start_making_progress_still_meets_the_absolute_cap(local):
    sb, _ = local
    spec = _spec("capped", ("{python}", "-c", SLOW, "{bind:api}", "busy", "600"), stall_s=2, cap_s=3)
    sb.start_service(spec)
    with pytest.raises(ServiceUnhealthy) as info:
        sb.wait_service_healthy("capped")
    assert "cap" in str(info.value), info.value
