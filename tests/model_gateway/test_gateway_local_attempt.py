"""The model gateway in whole attempts on the local backend (host processes, quick): a tiny
command system that calls the Messages API through the gateway each turn; the gateway's figures
in turns.jsonl and result.json, the agent's own as `agent_usage`; a budget that runs out
(`budget_exhausted`); a provider failing every call (infra_error, so the campaign retries); a
model-calling system without model access (bad input before anything runs)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from runtime_support import fake_scenario

# The "agent": one Messages call per turn through the gateway, then it writes what it was told.
AGENT = r'''
import json, os, sys, urllib.request, urllib.error
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages?beta=true", method="POST",
    data=json.dumps({"model": os.environ["PB_MODEL"], "max_tokens": 64, "stream": False, "tools": [{"name": "Bash"}],
                     "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json",
             "anthropic-version": "2023-06-01"})
try:
    body = json.load(urllib.request.urlopen(req, timeout=30)); code = 0
except urllib.error.HTTPError as exc:
    body = json.load(exc); code = 1
json.dump({"requests": 1, "output_tokens": (body.get("usage") or {}).get("output_tokens", 0)},
          open(os.path.join(sys.argv[1], "agent-usage.json"), "w"))
print(json.dumps(body))
sys.exit(code)
'''

STEP = {"content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 900, "output_tokens": 30, "cache_read_tokens": 100}}


@pytest.fixture()
def local(tmp_path):
    from orchestrator.backends.local import LocalBackend
    from orchestrator.config import RuntimeConfig

    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-gw-local")
    return cfg, LocalBackend(cfg)


def setup(tmp_path: Path, script: dict[str, Any], budget: dict[str, Any] | None = None) -> tuple[Path, Path]:
    (tmp_path / "agent.py").write_text(AGENT)
    systems = tmp_path / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"tiny-model-agent": {
        "argv": [sys.executable, str(tmp_path / "agent.py"), "{out_dir}"], "usage": "usage-file",
        "model": {"provider": "anthropic", "model": "fake-claude", "base_url_env": "ANTHROPIC_BASE_URL",
                  "key_env": "ANTHROPIC_API_KEY"}}}}))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    access = tmp_path / "access.yaml"
    access.write_text(yaml.safe_dump({"providers": {"anthropic": {"fake_script": "script.yaml", "models": ["fake-claude"]}},
                                      "budget": budget or {}}))
    return systems, access


def run(cfg, backend, tmp_path: Path, systems: Path, access: Path | None, turns: int = 2):
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    scenario, task = fake_scenario(tmp_path / "scenario", turns=turns)
    spec = AttemptSpec(parse_cell("tiny-model-agent:fake"), 0, systems_file=systems, model_access=access)
    return run_attempt(spec, backend=backend, config=cfg, scenario=scenario, task=task, grade=False)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_gateway_usage_in_turns_and_result(local, tmp_path) -> None:
    cfg, backend = local
    systems, access = setup(tmp_path, {"match": "any", "steps": [STEP, STEP]})
    result = run(cfg, backend, tmp_path, systems, access)
    rec = result.record
    assert rec["outcome"] == "graded", rec.get("error")
    turns = lines(result.paths.turns_jsonl)
    assert [t["usage"]["requests"] for t in turns] == [1, 1]
    assert turns[0]["usage"]["source"] == "gateway" and turns[0]["usage"]["prompt_tokens"] == 1000  # cache reads included
    assert turns[0]["agent_usage"] == {"requests": 1, "output_tokens": 30}  # the cross-check
    assert rec["usage"]["requests"] == 2 and rec["usage"]["output_tokens"] == 60
    assert rec["usage"]["cost_usd"] == pytest.approx(2 * (900 * 1 + 100 * 0.1 + 30 * 10) / 1e6)
    rows = lines(result.paths.root / "gateway.jsonl")
    assert [(r["turn"], r["status"]) for r in rows] == [(1, "ok"), (2, "ok")]
    assert "pbv-" not in "".join(f.read_text(errors="replace") for f in result.paths.root.rglob("*.json*"))


def test_budget_exhausted_is_recorded(local, tmp_path) -> None:
    cfg, backend = local
    systems, access = setup(tmp_path, {"match": "any", "steps": [STEP, STEP]}, budget={"max_tokens": 500})
    rec = run(cfg, backend, tmp_path, systems, access).record
    assert rec["outcome"] == "agent_error"  # the agent spent the budget: its own failure
    turns = rec["turns"]
    assert [t["budget_exhausted"] for t in turns] == [False, True]
    assert rec["usage"]["budget_exhausted"] is True and rec["usage"]["requests"] == 1


def test_provider_outage_is_infra_error(local, tmp_path) -> None:
    cfg, backend = local
    outage = {"match": "any", "steps": [], "otherwise": {"fail": {"status": 503, "type": "api_error"}}}
    systems, access = setup(tmp_path, outage)
    rec = run(cfg, backend, tmp_path, systems, access).record
    assert rec["outcome"] == "infra_error" and "provider" in rec["error"]["message"]
    assert len(rec["turns"]) == 1  # stopped at the first failed turn


def test_model_access_required_before_anything_runs(tmp_path) -> None:
    """`orchestrate attempt|campaign` refuse a model-calling system without model access (bad
    input, before any attempt); with it, the access is part of the system's identity."""
    from orchestrator.attempt.inputs import systems_identity
    from orchestrator.cells import parse_cell
    from orchestrator.errors import ConfigError

    systems, access = setup(tmp_path, {"steps": []})
    cells = [parse_cell("tiny-model-agent:payment-run")]
    with pytest.raises(ConfigError, match="--model-access"):
        systems_identity(cells, str(systems), None)
    first = systems_identity(cells, str(systems), str(access))["tiny-model-agent"]["sha256"]
    access.write_text(access.read_text().replace("fake-claude", "fake-claude-2"))
    # Another declared model makes it another system for the campaign (a resume is refused).
    assert systems_identity(cells, str(systems), str(access))["tiny-model-agent"]["sha256"] != first
