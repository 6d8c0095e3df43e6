"""The docker backend's warm pool (orchestrator/backends/docker/warm_pool.py): an attempt's networks
and its ERP, started in standby, made ahead; each slot taken by exactly one attempt.

Real attempts on a backend with one slot:

- two null attempts one after the other each take a slot (the ERP's log shows its standby line
  before its ready line), the second a new one made after the first was taken: no network,
  container or volume of the one is the other's; both are graded like a cold attempt;
- the backend's shutdown removes the untaken slot, and nothing of the campaign is left;
- an ERP declared differently from the slot's shape (another environment) does not take the
  standby: the standby is removed (it holds the ERP's addresses) and the ERP starts cold.
"""
from __future__ import annotations

import dataclasses
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from runtime_support import TEST_CAMPAIGN, fake_scenario, remove_campaign

from orchestrator.config import Images, RuntimeConfig
from orchestrator.services.erp import ErpLaunch, erp_service

pytestmark = pytest.mark.docker


def _backend(tmp: Path, docker_client: Any, images: Any) -> Any:
    from orchestrator.backends.docker.sandbox import DockerBackend

    cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", campaign=f"{TEST_CAMPAIGN}-warm-{uuid.uuid4().hex[:6]}",
                                 admission_root=tmp / "slots", warm_erp_slots=1,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    backend = DockerBackend(cfg, client=docker_client)
    backend.ensure_prepared()
    assert backend.warm_pool is None  # made at the first ERP start: here, as if one had started
    backend.ensure_warm_pool(erp_service(ErpLaunch(db=Path("/dev/null"), world=Path("/dev/null"),
                                                   control_token="-" * 32), cfg))
    backend.refill_warm_pool()  # as after that ERP's health wait
    return backend


def _ready_slot(backend: Any, timeout_s: float = 180) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with backend.warm_pool._lock:
            if backend.warm_pool._ready:
                return backend.warm_pool._ready[0]
        time.sleep(0.2)
    raise AssertionError("no warm slot was made")


def _ids(slot: Any) -> set[str]:
    return {slot.erp.id, slot.volume.name} | {n.id for n in slot.networks.values()}


def test_each_attempt_takes_its_own_slot_and_nothing_is_left(tmp_path, docker_client, images):
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    backend = _backend(tmp_path, docker_client, images)
    cfg = backend.config
    try:
        scenario, task = fake_scenario(tmp_path / "scenario", turns=2)
        seen: list[set[str]] = []
        for rep in (0, 1):
            slot = _ready_slot(backend)
            seen.append(_ids(slot))
            result = run_attempt(AttemptSpec(parse_cell("null:fake"), 0, rep=rep), backend=backend, config=cfg,
                                 scenario=scenario, task=task, grade=False)
            assert result.outcome == "graded", result.record.get("error")
            assert backend.warm_pool.taken == rep + 1
            log = result.paths.service_log("erp").read_text()
            assert log.index('"event": "standby"') < log.index('"event": "ready"'), log[:400]
        assert not seen[0] & seen[1], "a slot's object served two attempts"
        _ready_slot(backend)  # the refill after the second take
        assert backend.shutdown() == []
    finally:
        backend.shutdown()
        left = remove_campaign(docker_client, cfg.campaign)
    assert not left, f"left behind: {left}"


def test_an_erp_of_another_shape_starts_cold_in_place_of_the_standby(tmp_path, docker_client,
                                                                                   images):
    from orchestrator.backends.base import AttemptContext
    from orchestrator.cells import Cell
    from orchestrator.errors import ErpUnhealthy
    from orchestrator.identity import AttemptIdentity
    from orchestrator.paths import AttemptPaths

    backend = _backend(tmp_path, docker_client, images)
    cfg = backend.config
    try:
        standby = _ready_slot(backend).erp
        scenario, _task = fake_scenario(tmp_path / "scenario", turns=1)
        attempt_id = f"warm-{uuid.uuid4().hex[:8]}"
        paths = AttemptPaths.for_identity(cfg.runs_root, attempt_id, AttemptIdentity.of(Cell("null", "fake"), 0, 1, 1))
        paths.prepare()
        sb = backend.open_attempt(AttemptContext(attempt_id, cfg.campaign, paths))
        try:
            assert sb.containers["erp-standby"].id == standby.id  # taken at open
            launch = ErpLaunch(db=Path(scenario.db), world=Path(scenario.world), control_token="t" * 32)
            spec = dataclasses.replace(erp_service(launch, cfg), env={"PYTHONUNBUFFERED": "1", "BBERP_X": "1"})
            sb.start_service(spec)
            sb.wait_service_healthy("erp", error=ErpUnhealthy)
            assert sb.containers["erp"].id != standby.id and "erp-standby" not in sb.containers
            assert '"event": "standby"' not in paths.service_log("erp").read_text()
            with pytest.raises(Exception, match="No such container|404|Not Found"):
                docker_client.containers.get(standby.id)  # removed before the cold start (its addresses)
        finally:
            assert sb.close() == []
    finally:
        backend.shutdown()
        left = remove_campaign(docker_client, cfg.campaign)
    assert not left, f"left behind: {left}"
