"""End to end (issue 11): `claude-code` on payment-run seed 0 in containers, against the fake
provider, through the model gateway, graded like any other attempt; then the same attempt with a
token budget that runs out, and with a provider that fails every call (an infra error that the
campaign retries).

The real Claude Code binary (the agent-claude image) runs in the agent container as the agent
user; the fake provider runs on the attempt's egress network only, playing
agent_sandbox/examples/fake-claude-payment-run.yaml.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_paths import REPO_ROOT

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1500)]

EXAMPLES = REPO_ROOT / "agent_sandbox" / "examples"
SCRIPT = EXAMPLES / "fake-claude-payment-run.yaml"


@pytest.fixture(scope="module")
def inputs():
    from orchestrator.cells import parse_cell
    from orchestrator.inputs import load_inputs

    return load_inputs(parse_cell("claude-code:payment-run"), 0)


@pytest.fixture()
def runtime(tmp_path, docker_client, images):
    """(config, backend) with a campaign label of its own; nothing of it may be left behind."""
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"pytest-gateway-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
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


def access_file(tmp_path: Path, *, script: dict[str, Any] | None = None, budget: dict[str, Any] | None = None) -> Path:
    doc = yaml.safe_load((EXAMPLES / "model-access-fake.yaml").read_text())
    script_path = tmp_path / "script.yaml"
    script_path.write_text(yaml.safe_dump(script) if script is not None else SCRIPT.read_text())
    doc["providers"]["anthropic"]["fake_script"] = str(script_path)
    if budget is not None:
        doc["budget"] = budget
    path = tmp_path / "model-access.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run(cfg, backend, inputs, access: Path, rep: int = 1):
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    spec = AttemptSpec(parse_cell("claude-code:payment-run"), 0, rep=rep, model_access=access)
    return run_attempt(spec, backend=backend, config=cfg, task=inputs.task, scenario=inputs.scenario)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_claude_code_payment_run_through_the_gateway(runtime, inputs, tmp_path) -> None:
    cfg, backend = runtime
    result = run(cfg, backend, inputs, access_file(tmp_path))
    rec = result.record
    p = result.paths
    assert rec["outcome"] == "graded", rec.get("error")
    assert rec["isolation"] == "docker" and isinstance(rec["passed"], bool) and rec["checks"]
    # The real Claude Code ran in the agent container and finished every turn.
    first = json.loads((p.turn_dir(1) / "out" / "stdout.txt").read_text())
    assert first["type"] == "result" and first["is_error"] is False, first
    assert all(t["exit_code"] == 0 for t in rec["turns"])
    # Its scripted tool calls reached the ERP under the agent's token.
    agent_token_id = inputs.scenario.meta["agent_token_id"]
    audit = lines(p.audit_jsonl)
    api = [e for e in audit if e["channel"] == "api"]
    assert any(e["path"] == "/whoami" for e in api), [e["path"] for e in api]
    assert any(e["path"].startswith("/ap-invoices") and e["method"] == "GET" for e in api)
    assert api and all(e["token_id"] == agent_token_id for e in api)
    # The usage log's token counts equal what the fake provider reported, call for call.
    rows = [r for r in lines(p.root / "gateway.jsonl") if r["status"] == "ok"]
    received = [r for r in lines(p.root / "fake-provider.jsonl") if r.get("usage") is not None]
    assert len(rows) == len(received) >= 3 + len(rec["turns"]) - 1
    for got, sent in zip(rows, received, strict=True):
        assert (got["input_tokens"], got["output_tokens"], got["cache_read_tokens"], got["cache_write_tokens"]) == (
            sent["usage"].get("input_tokens", 0), sent["usage"].get("output_tokens", 0),
            sent["usage"].get("cache_read_tokens", 0), sent["usage"].get("cache_write_tokens", 0))
    # The fake takes no key, so the gateway sent none upstream: the agent's virtual key was stripped.
    assert all(r["headers"].get("x-api-key") in (None, "(redacted)") for r in received)
    # turns.jsonl and result.json carry the gateway's figures; the agent's own are the cross-check.
    turns = lines(p.turns_jsonl)
    assert all(t["usage"]["source"] == "gateway" for t in turns)
    assert turns[0]["usage"]["output_tokens"] == turns[0]["agent_usage"]["output_tokens"]
    assert turns[0]["usage"]["prompt_tokens"] == turns[0]["agent_usage"]["input_tokens"]
    total = rec["usage"]
    assert total["source"] == "gateway" and total["requests"] == len(rows)
    assert total["output_tokens"] == sum(r["output_tokens"] for r in rows)
    assert total["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows)) and total["cost_usd"] > 0
    assert total["price_version"] == "2026-12-01"
    # The trajectory (issue 32): valid ATIF v1.7, its model steps the ledger's rows with their
    # figures, its ERP results the audit log's agent requests in order; the transcript agrees.
    from orchestrator.trajectory.atif import atif_problems
    from orchestrator.trajectory.verify import trajectory_problems

    assert "transcript_mismatch" not in rec, rec.get("transcript_mismatch")
    doc = json.loads((p.root / "trajectory.json").read_text())
    assert atif_problems(doc) == [] and trajectory_problems(p.root) == []
    model = [s for s in doc["steps"] if (s.get("extra") or {}).get("gateway")]
    assert [(s["metrics"]["prompt_tokens"], s["metrics"]["completion_tokens"]) for s in model] == [
        (r["prompt_tokens"], r["output_tokens"]) for r in lines(p.root / "gateway.jsonl")]
    erp = [r["extra"]["erp"]["audit_id"] for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
           if "erp" in (r.get("extra") or {})]
    assert erp == [e["id"] for e in api]
    assert model[0]["tool_calls"][0]["arguments"]["command"] == "erp whoami" and doc["agent"]["version"] != "unknown"
    # No key is written to any record of the attempt.
    blob = "\n".join(f.read_text(errors="replace") for f in p.root.rglob("*") if f.is_file() and f.suffix != ".db")
    assert "pbv-" not in blob


# make test-heavy (CI time); test_gateway_chat_budget.py keeps token budgets against a real gateway.
@pytest.mark.heavy
def test_token_budget_runs_out(runtime, inputs, tmp_path) -> None:
    cfg, backend = runtime
    result = run(cfg, backend, inputs, access_file(tmp_path, budget={"max_tokens": 4000}), rep=2)
    rec = result.record
    # Claude Code exits 1 on the provider's (the gateway's) 400: the agent's run, scored as its
    # own failure, never as the infrastructure's.
    assert rec["outcome"] == "agent_error", rec.get("error")
    turns = lines(result.paths.turns_jsonl)
    assert turns[0]["budget_exhausted"] is True and all(t["budget_exhausted"] for t in turns)
    assert rec["usage"]["budget_exhausted"] is True
    assert rec["usage"]["requests"] == 1  # the first call (6141 tokens) crossed the cap
    out = json.loads((result.paths.turn_dir(1) / "out" / "stdout.txt").read_text())
    assert "token budget" in out.get("result", "")


@pytest.mark.heavy  # make test-heavy: CI runs a representative subset (the same path is covered in make test)
def test_provider_outage_is_an_infra_error(runtime, inputs, tmp_path) -> None:
    cfg, backend = runtime
    outage = {"match": "any", "steps": [], "otherwise": {"fail": {"status": 529, "type": "overloaded_error",
                                                                   "message": "Overloaded"}}}
    result = run(cfg, backend, inputs, access_file(tmp_path, script=outage), rep=3)
    rec = result.record
    assert rec["outcome"] == "infra_error", rec
    assert "provider" in rec["error"]["message"] and rec["error"]["phase"] == "turn"
    assert rec["usage"] == {} or not rec["usage"].get("cost_usd")
    from orchestrator.campaign.declaration import FINAL_OUTCOMES

    assert "infra_error" not in FINAL_OUTCOMES  # so the campaign retries it
