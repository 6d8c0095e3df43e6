"""A whole Codex attempt on the local backend: the real Codex CLI 0.163 (the pinned wheel's binary,
as tests/model_gateway/test_gateway_codex_local.py runs it) through the `codex` harness, the
gateway and the fake provider, calling `erp` from its shell tool on the test scenario. Its
trajectory is valid ATIF v1.7; its model steps are the usage log's rows with the usage log's figures
and Codex's words; its ERP results are the audit log's agent requests, in order, each under the
shell call that made it; Codex's totals equal the usage log's, so the attempt is not marked."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from runtime_support import fake_scenario

from orchestrator.trajectory.atif import atif_problems
from orchestrator.trajectory.verify import trajectory_problems

pytestmark = pytest.mark.slow

STEPS = [
    {"content": [{"type": "text", "text": "Who am I in the ERP?"},
                 # (by its path: Codex runs `bash -lc`, whose login profile drops the venv from PATH)
                 {"type": "tool_use", "name": "exec_command", "input": {"cmd": f"{Path(sys.executable).parent / 'erp'} whoami"}}],
     "usage": {"input_tokens": 900, "output_tokens": 30, "cache_read_tokens": 200}},
    {"content": [{"type": "text", "text": "Done for today."}], "usage": {"input_tokens": 1000, "output_tokens": 7}},
]


def test_a_codex_attempt_gives_a_trajectory_that_matches_the_usage_log_and_the_audit(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "model_gateway"))
    from test_gateway_codex_local import codex_binary

    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends.local import LocalBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import RuntimeConfig

    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-traj-codex")
    systems = tmp_path / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"codex-local": {
        "argv": [sys.executable, "-m", "agent_sandbox.harness_codex", "--prompt-file", "{prompt_file}", "--out-dir", "{out_dir}",
                 "--bin", str(codex_binary())],
        "usage": "codex-jsonl",
        "model": {"provider": "openai", "model": "fake-gpt", "base_url_env": "OPENAI_BASE_URL", "key_env": "OPENAI_API_KEY",
                  "base_path": "/v1"}}}}))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump({"match": "tools", "steps": STEPS + STEPS}))
    access = tmp_path / "access.yaml"
    access.write_text(yaml.safe_dump({"providers": {"openai": {"fake_script": "script.yaml", "models": ["fake-gpt"]}}}))
    scenario, task = fake_scenario(tmp_path / "scenario", turns=2)
    spec = AttemptSpec(parse_cell("codex-local:fake"), 0, systems_file=systems, model_access=access)
    result = run_attempt(spec, backend=LocalBackend(cfg), config=cfg, scenario=scenario, task=task, grade=False)
    rec, root = result.record, result.paths.root
    assert rec["outcome"] == "graded", (rec.get("error"), (root / "turns" / "1" / "out" / "stderr.txt").read_text()[-2000:])
    assert "transcript_mismatch" not in rec, rec.get("transcript_mismatch")
    doc = json.loads((root / "trajectory.json").read_text())
    assert atif_problems(doc) == [] and trajectory_problems(root) == []
    usage = [json.loads(x) for x in (root / "gateway.jsonl").read_text().splitlines()]
    model = [s for s in doc["steps"] if (s.get("extra") or {}).get("gateway")]
    assert len(model) == len(usage) == 4
    assert [s["message"] for s in model] == ["Who am I in the ERP?", "Done for today."] * 2
    for step, row in zip(model, usage, strict=True):
        assert (step["metrics"]["prompt_tokens"], step["metrics"]["completion_tokens"], step["metrics"]["cached_tokens"]) == (
            row["prompt_tokens"], row["output_tokens"], row["cache_read_tokens"])
    api = [json.loads(x) for x in (root / "audit.jsonl").read_text().splitlines()]
    api = [r for r in api if r["channel"] == "api"]
    placed: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (s, r) for s in doc["steps"] for r in (s.get("observation") or {}).get("results", []) if "erp" in (r.get("extra") or {})]
    assert [r["extra"]["erp"]["audit_id"] for _, r in placed] == [r["id"] for r in api] and len(api) == 2
    for step, res in placed:
        assert step["message"] == "Who am I in the ERP?"
        assert res["source_call_id"] == step["tool_calls"][0]["tool_call_id"] and step["tool_calls"][0]["function_name"] == "shell"
