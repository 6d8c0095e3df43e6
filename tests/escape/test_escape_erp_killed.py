"""Escape suite, infrastructure side: an ERP container killed in the middle of a turn makes the
attempt an `infra_error` (never a failed grade), through the whole `run_attempt` lifecycle on the
real `payment-run` scenario with a command system whose turn sleeps while the test kills the ERP."""
from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]


@pytest.fixture()
def runtime(docker_client, images, tmp_path):
    """(config, backend) under a campaign label of this test only; nothing may be left behind."""
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"pytest-escape-kill-{uuid.uuid4().hex[:8]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign, images=Images(erp=images.erp.tag, agent=images.agent.tag))
    yield cfg, DockerBackend(cfg, client=docker_client)
    flt = {"label": f"pb.campaign={campaign}"}
    left = [f"container {c.name}" for c in docker_client.containers.list(all=True, filters=flt)]
    left += [f"network {n.name}" for n in docker_client.networks.list(filters=flt)]
    left += [f"volume {v.name}" for v in docker_client.volumes.list(filters=flt)]
    for c in docker_client.containers.list(all=True, filters=flt):
        c.remove(force=True)
    for v in docker_client.volumes.list(filters=flt):
        v.remove(force=True)
    for n in docker_client.networks.list(filters=flt):
        n.remove()
    assert not left, f"left behind: {left}"


def test_erp_killed_mid_turn_is_infra_error_not_a_failed_grade(runtime, docker_client, tmp_path):
    from escape_support import escape_scenario

    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    cfg, backend = runtime
    scenario = escape_scenario("payment-run", 0)  # generated before the clock of the kill starts
    systems = tmp_path / "systems.yaml"
    systems.write_text('systems:\n  escape-sleeper:\n    argv: ["sleep", "8"]\n')
    killed: list[str] = []

    def killer() -> None:
        flt = {"label": [f"pb.campaign={cfg.campaign}", "pb.role=agent"], "status": "running"}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            if docker_client.containers.list(filters=flt):
                time.sleep(1.0)  # well inside the turn's sleep
                for erp in docker_client.containers.list(filters={"label": [f"pb.campaign={cfg.campaign}", "pb.role=erp"]}):
                    erp.kill()
                    killed.append(erp.name)
            time.sleep(0.2)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    spec = AttemptSpec(parse_cell("escape-sleeper:payment-run"), 0, label="escape-kill", systems_file=systems)
    from tasks.registry import load_task

    result = run_attempt(spec, backend=backend, root=cfg.runs_root, config=cfg, scenario=scenario, task=load_task("payment-run"))
    t.join(10)
    assert killed, "the test never saw the agent container running"

    rec = json.loads(result.paths.result_json.read_text())  # what was recorded, not just returned
    assert rec == result.record or rec["outcome"] == result.outcome
    assert rec["outcome"] == "infra_error", rec
    assert rec["isolation"] == "docker"
    # Not scored as the agent's failure: never graded, no checks, not a breach.
    assert rec["passed"] is False and rec["graded"] is False and rec["checks"] == [] and rec["breach"] is False, rec
    err = rec["error"]
    assert err["phase"] == "turn" and err["kind"] == "infra_error" and err["exception"] == "ErpUnhealthy", err
    pm = [p for p in err["post_mortem"] if p["name"].endswith("-erp")]
    assert pm and pm[0]["status"] == "exited" and pm[0]["exit_code"] == 137, err["post_mortem"]
    # The agent's own turn ran to its end normally: the failure is the infrastructure's.
    assert [t["exit_code"] for t in rec["turns"]] == [0], rec["turns"]
    assert not rec["turns"][0]["timed_out"]
