"""The process-wide limit on Docker Engine API requests (orchestrator/backends/docker/limits.py):
which requests bypass it or take the teardown lane, that at most N ordinary requests are in
flight, that teardown is not blocked by saturated general slots, and (with the engine) that two
concurrent payment-run attempts finish graded with a single general slot."""
from __future__ import annotations

import threading
import time
import uuid
from types import SimpleNamespace

import pytest

from orchestrator.backends.docker.limits import (
    ApiSlotTimeout,
    DockerApiLimiter,
    classify,
    limit_client,
    process_limiter,
)
from orchestrator.config import RuntimeConfig

BASE = "http+docker://localhost/v1.41"


@pytest.mark.parametrize(
    ("method", "path", "lane"),
    [
        ("POST", "/containers/abc/wait", "bypass"),
        ("POST", "/containers/abc/wait?condition=not-running", "bypass"),
        ("POST", "/containers/abc/attach?stream=1&stdout=1", "bypass"),
        ("GET", "/containers/abc/attach/ws", "bypass"),
        ("GET", "/containers/abc/logs?stderr=1&stdout=1&timestamps=0&follow=1&tail=all", "bypass"),
        ("GET", "/containers/abc/logs?follow=true", "bypass"),
        ("GET", "/events?filters=%7B%7D", "bypass"),
        ("GET", "/containers/abc/stats", "bypass"),  # the engine streams stats by default
        ("POST", "/exec/e1/start", "bypass"),
        ("POST", "/build?t=x", "bypass"),
        # bounded calls: general lane
        ("GET", "/containers/abc/logs?stderr=1&stdout=1&follow=0&tail=60", "general"),
        ("GET", "/containers/abc/stats?stream=0", "general"),
        ("GET", "/containers/abc/json", "general"),
        ("POST", "/containers/create?name=pb-x", "general"),
        ("POST", "/containers/abc/start", "general"),
        ("PUT", "/containers/abc/archive?path=%2Fturn", "general"),
        ("GET", "/containers/abc/archive?path=%2Fworkspace%2F.", "general"),
        ("POST", "/networks/create", "general"),
        ("POST", "/networks/n1/connect", "general"),
        ("GET", "/networks", "general"),
        ("POST", "/volumes/create", "general"),
        ("GET", "/_ping", "general"),
        # removals and stops: teardown lane
        ("DELETE", "/containers/abc?v=False&link=False&force=True", "teardown"),
        ("DELETE", "/volumes/pb-x-workspace?force=True", "teardown"),
        ("DELETE", "/networks/n1", "teardown"),
        ("POST", "/containers/abc/stop?t=10", "teardown"),
        ("POST", "/containers/abc/kill", "teardown"),
    ],
)
def test_classify(method, path, lane):
    assert classify(method, BASE + path) == lane
    assert classify(method, "http+docker://localhost" + path) == lane  # without the version prefix


def _run_concurrently(
    limiter: DockerApiLimiter, lane: str, n: int, release: threading.Event, entered: list
) -> list[threading.Thread]:
    lock = threading.Lock()

    def fake_send():
        with lock:
            entered.append(threading.get_ident())
        release.wait(5)
        return "ok"

    threads = [threading.Thread(target=limiter.call, args=(lane, fake_send, 5.0)) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def _until(cond, timeout=2.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def test_at_most_n_general_requests_in_flight():
    limiter = DockerApiLimiter(general_slots=3, teardown_slots=1)
    release, entered = threading.Event(), []
    threads = _run_concurrently(limiter, "general", 8, release, entered)
    assert _until(lambda: len(entered) == 3)
    time.sleep(0.2)  # the others stay queued
    assert len(entered) == 3 and limiter.in_flight["general"] == 3
    release.set()
    for t in threads:
        t.join(5)
    assert len(entered) == 8 and limiter.peak["general"] == 3 and limiter.in_flight["general"] == 0


def test_long_polls_hold_no_slot():
    limiter = DockerApiLimiter(general_slots=1, teardown_slots=1)
    release, entered = threading.Event(), []
    waits = _run_concurrently(limiter, "bypass", 5, release, entered)  # five turns waiting
    assert _until(lambda: len(entered) == 5)
    assert limiter.call("general", lambda: "created", 1.0) == "created"
    assert limiter.call("teardown", lambda: "removed", 1.0) == "removed"
    release.set()
    for t in waits:
        t.join(5)
    assert limiter.peak["bypass"] == 5


def test_teardown_is_not_blocked_by_saturated_general_slots():
    limiter = DockerApiLimiter(general_slots=2, teardown_slots=1)
    release, entered = threading.Event(), []
    setups = _run_concurrently(limiter, "general", 6, release, entered)  # a burst of setups
    assert _until(lambda: len(entered) == 2)
    t = time.monotonic()
    assert limiter.call("teardown", lambda: "removed", 1.0) == "removed"
    assert time.monotonic() - t < 0.5
    release.set()
    for th in setups:
        th.join(5)


def test_waiting_for_a_slot_is_bounded():
    limiter = DockerApiLimiter(general_slots=1, teardown_slots=1)
    release, entered = threading.Event(), []
    holder = _run_concurrently(limiter, "general", 1, release, entered)
    assert _until(lambda: len(entered) == 1)
    with pytest.raises(ApiSlotTimeout, match="no free docker API slot"):
        limiter.call("general", lambda: None, 0.1)
    release.set()
    holder[0].join(5)


class _Session:
    """Stands in for the SDK's APIClient (a requests.Session): records what `send` saw."""

    def __init__(self):
        self.sent: list[str] = []

    def send(self, request, **kwargs):
        self.sent.append(f"{request.method} {request.url}")
        return "response"


def test_limit_client_wraps_send_once_and_routes_by_lane():
    api = _Session()
    client = SimpleNamespace(api=api)
    first = DockerApiLimiter(1, 1)
    limit_client(client, first, timeout_s=1.0)
    second = DockerApiLimiter(2, 1)
    limit_client(client, second, timeout_s=1.0)  # swaps the limiter, does not wrap twice
    assert api.send.__wrapped__ == _Session.send.__get__(api)
    assert api.send(SimpleNamespace(method="POST", url=BASE + "/containers/create")) == "response"
    api.send(SimpleNamespace(method="DELETE", url=BASE + "/networks/n1"))
    api.send(SimpleNamespace(method="POST", url=BASE + "/containers/c/wait"))
    assert len(api.sent) == 3
    assert first.peak == {"general": 0, "teardown": 0, "bypass": 0}
    assert second.peak == {"general": 1, "teardown": 1, "bypass": 1}


def test_limits_come_from_the_runtime_config(monkeypatch):
    cfg = RuntimeConfig()
    assert (cfg.docker_api_slots, cfg.docker_api_teardown_slots) == (8, 4)
    monkeypatch.setenv("PB_DOCKER_API_SLOTS", "3")
    assert RuntimeConfig.from_env().docker_api_slots == 3
    monkeypatch.setenv("PB_DOCKER_API_SLOTS", "0")
    with pytest.raises(ValueError, match="docker_api_slots"):
        RuntimeConfig.from_env()
    assert process_limiter(3, 2) is process_limiter(3, 2)  # one per configuration, process-wide
    with pytest.raises(ValueError):
        DockerApiLimiter(0, 1)


# ----------------------------------------------------------------------------- real engine


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_two_payment_run_attempts_with_one_api_slot(tmp_path, request):
    from runtime_support import docker_client, remove_campaign, resolve_images

    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import Images
    from orchestrator.inputs import load_inputs

    client = docker_client()
    images = resolve_images(request)
    inputs = load_inputs(parse_cell("null:payment-run"), 0)
    campaign = f"pytest-apilimit-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(
        runs_root=tmp_path / "runs", campaign=campaign, images=Images(erp=images.erp.tag, agent=images.agent.tag),
        docker_api_slots=1, docker_api_teardown_slots=1,
    )
    backend = DockerBackend(cfg, client=client)
    limiter = backend.api_limiter
    assert (limiter.general_slots, limiter.teardown_slots) == (1, 1)
    results: dict[int, object] = {}

    def attempt(rep: int) -> None:
        spec = AttemptSpec(parse_cell("null:payment-run"), 0, rep=rep, label=campaign)
        results[rep] = run_attempt(spec, backend=backend, config=cfg, scenario=inputs.scenario, task=inputs.task)

    try:
        threads = [threading.Thread(target=attempt, args=(rep,)) for rep in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert sorted(results) == [1, 2]
        for rep, result in results.items():
            rec = result.record
            assert rec["outcome"] == "graded", (rep, rec.get("error"))
            assert rec["passed"] is False  # null does nothing: graded, not passed
        assert limiter.peak["general"] == 1 and limiter.peak["teardown"] == 1
        assert limiter.peak["bypass"] >= 2  # waits and log followers ran without slots
    finally:
        left = remove_campaign(client, campaign)
    assert not left, f"left behind: {left}"
