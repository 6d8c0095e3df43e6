"""Provider limits in containers: an attempt's gateway container consults the campaign's limiter
service on the host (through the per-attempt host door on the egress bridge, like a model served
on the host) before each upstream call; the agent's turn gets its budget extension variables and
the turn record its provider wait. The agent is a tiny Python command in the agent image making
two Messages calls; the provider is the fake on the attempt's egress network."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.model_access import load_model_access
from orchestrator.model_limits import start_campaign_limiter, stop_campaign_limiter

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(900)]

AGENT = r'''
import json, os, sys, urllib.request
assert os.environ.get("PB_PROVIDER_WAIT_URL") and os.environ.get("PB_PROVIDER_WAIT_KEY")
for _ in range(2):
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
        data=json.dumps({"model": os.environ["PB_MODEL"], "max_tokens": 64,
                         "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json"})
    print(urllib.request.urlopen(req, timeout=120).status)
'''


@pytest.fixture()
def runtime(tmp_path: Path, docker_client: Any, images: Any) -> Any:
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"pytest-limits-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    yield cfg, DockerBackend(cfg, client=docker_client)
    flt = {"label": f"pb.campaign={campaign}"}
    left = [f"container {c.name}" for c in docker_client.containers.list(all=True, filters=flt)]
    left += [f"network {n.name}" for n in docker_client.networks.list(filters=flt)]
    for c in docker_client.containers.list(all=True, filters=flt):
        c.remove(force=True)
    for v in docker_client.volumes.list(filters=flt):
        v.remove(force=True)
    for n in docker_client.networks.list(filters=flt):
        n.remove()
    assert not left, f"left behind: {left}"


def test_a_container_gateway_consults_the_campaigns_limiter(tmp_path: Path, runtime: Any) -> None:
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell
    from orchestrator.images.config import PYTHON
    from orchestrator.inputs import load_inputs

    cfg, backend = runtime
    (tmp_path / "script.yaml").write_text(yaml.safe_dump({"match": "any", "steps": [], "otherwise": {
        "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 40, "output_tokens": 4}}}))
    access_path = tmp_path / "access.yaml"
    access_path.write_text(yaml.safe_dump({
        "providers": {"anthropic": {"fake_script": "script.yaml", "models": ["fake-claude"]}},
        "limits": {"anthropic": {"requests_per_minute": 30, "concurrent_streams": 1}}}))
    systems = tmp_path / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"tiny-model-agent": {
        "argv": [PYTHON, "-c", AGENT],
        "model": {"provider": "anthropic", "model": "fake-claude", "base_url_env": "ANTHROPIC_BASE_URL",
                  "key_env": "ANTHROPIC_API_KEY"}}}}))
    service = start_campaign_limiter(load_model_access(access_path))
    assert service is not None
    try:
        cell = parse_cell("tiny-model-agent:payment-run")
        inputs = load_inputs(cell, 0)
        spec = AttemptSpec(cell, 0, rep=1, model_access=access_path, systems_file=systems)
        result = run_attempt(spec, backend=backend, config=cfg, task=inputs.task, scenario=inputs.scenario)
        stats = service.stats()["providers"]["anthropic"]
    finally:
        stop_campaign_limiter()
    rec, paths = result.record, result.paths
    assert rec["outcome"] == "graded" and rec["isolation"] == "docker", rec.get("error")
    turns = rec["turns"]
    assert turns and all(t["exit_code"] == 0 for t in turns), turns
    assert all("provider_wait_s" in t["usage"] for t in turns)
    rows = [json.loads(x) for x in (paths.root / "gateway.jsonl").read_text().splitlines() if x.strip()]
    assert len(rows) == 2 * len(turns) and all(r["status"] == "ok" and "queued_s" in r for r in rows)
    # The grants were counted by the host's limiter service: the container's gateway reached it.
    assert sum(stats["granted"].values()) == len(rows), stats
