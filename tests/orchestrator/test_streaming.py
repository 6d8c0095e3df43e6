"""The audit/faults streamer against a real ERP (local backend): it backs off while the ERP is
idle, comes back to its short period as soon as new events arrive, and its drain misses nothing."""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
from runtime_support import fake_scenario


def _wait_for(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_the_streamer_backs_off_while_idle_and_catches_up_on_new_events(tmp_path):
    from orchestrator.attempt.control_client import ControlClient
    from orchestrator.attempt.streaming import ControlStreamer
    from orchestrator.backends.base import AttemptContext
    from orchestrator.backends.local import LocalBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import RuntimeConfig
    from orchestrator.identity import AttemptIdentity
    from orchestrator.paths import AttemptPaths
    from orchestrator.services.erp import ERP, ErpEndpoints, ErpLaunch, erp_service

    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-stream")
    scenario, _ = fake_scenario(tmp_path / "scenario")
    paths = AttemptPaths.for_identity(cfg.runs_root, "t", AttemptIdentity.of(parse_cell("null:fake"), 0, 1, 1))
    paths.prepare()
    sandbox = LocalBackend(cfg).open_attempt(AttemptContext("stream-" + uuid.uuid4().hex[:6], cfg.campaign, paths))
    token = "c" * 64
    try:
        erp = ErpEndpoints.of(sandbox.start_service(erp_service(ErpLaunch(Path(scenario.db), Path(scenario.world), token), cfg)))
        sandbox.wait_service_healthy(ERP)
        control = ControlClient(erp.control_url, token)
        streamer = ControlStreamer(control, paths.audit_jsonl, paths.faults_jsonl, interval_s=0.05, idle_max_s=0.4)
        streamer.start()
        try:
            # Idle: the period doubles up to the cap, so polls thin out (a fixed 0.05 s period
            # would poll about 30 times in 1.5 s).
            _wait_for(lambda: streamer.backoff.period_s == 0.4)
            before = streamer.polls
            time.sleep(1.5)
            idle_polls = streamer.polls - before
            assert 2 <= idle_polls <= 6, idle_polls

            # The agent acts: the events reach audit.jsonl at the next poll, and the period
            # drops back to the short one.
            agent = httpx.Client(base_url=erp.agent_url, headers={"Authorization": f"Bearer {scenario.meta['agent_token']}"})
            for _ in range(3):
                assert agent.get("/whoami").status_code == 200
            _wait_for(lambda: streamer.audit_count >= 3)
            _wait_for(lambda: streamer.backoff.period_s < 0.4, timeout_s=2.0)  # back off again from 0.05 s
            agent.close()
        finally:
            streamer.drain()
        lines = [json.loads(x) for x in paths.audit_jsonl.read_text().splitlines()]
        ids = [line["id"] for line in lines]
        assert len(lines) == streamer.audit_count >= 3 and ids == sorted(set(ids))
        assert streamer.poll_errors == 0
        control.close()
    finally:
        sandbox.close()


def test_poll_backoff_doubles_to_its_cap_and_resets_on_items():
    import pytest

    from orchestrator.poll_backoff import PollBackoff

    b = PollBackoff(0.5, 5.0)
    assert [b.after(0) for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert b.after(3) == 0.5 and b.after(0) == 1.0
    assert PollBackoff(2.0, 1.0).after(0) == 2.0  # a cap below the interval is the interval
    with pytest.raises(ValueError):
        PollBackoff(0, 1.0)
