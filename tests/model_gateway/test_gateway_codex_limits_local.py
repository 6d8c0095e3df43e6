"""Adapter limits on record (issue 31, item 2), end to end on the local backend: a systems-file
entry extending `codex` at high reasoning effort runs the real Codex CLI (tests/support/codex_cli.py)
through the gateway against the fake provider, for two turns of a real ERP scenario.

Codex sends the declared effort in its requests (so the limit was applied), and attempt.json,
every turn of turns.jsonl and result.json, and the report's attempt page record the harness, the
model, the effort, the turn's budget, the harness's own fixed settings and Codex's note that it
ran the unknown model name on its fallback metadata — beside the usage the gateway observed.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from codex_cli import codex_binary
from runtime_support import fake_scenario

pytestmark = pytest.mark.slow
STEP = {"content": [{"type": "text", "text": "Who am I?"},
                    {"type": "tool_use", "name": "exec_command", "input": {"cmd": "erp whoami"}}],
        "usage": {"input_tokens": 700, "output_tokens": 20}}
DONE = {"content": [{"type": "text", "text": "Done for today."}], "usage": {"input_tokens": 800, "output_tokens": 5}}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_codex_limits_applied_and_recorded(tmp_path) -> None:
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends.local import LocalBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import RuntimeConfig
    from orchestrator.report.attempt_page import render_attempt_page

    systems = tmp_path / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"codex-high": {
        "extends": "codex", "limits": {"reasoning_effort": "high"},
        "argv": [sys.executable, "-m", "agent_sandbox.harness_codex", "--prompt-file", "{prompt_file}",
                 "--out-dir", "{out_dir}", "--bin", str(codex_binary())]}}}))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump({"match": "tools", "steps": [STEP, DONE], "otherwise": DONE}))
    access = tmp_path / "access.yaml"
    access.write_text(yaml.safe_dump({"providers": {"openai": {"fake_script": "script.yaml", "models": ["fake-gpt"]}}}))
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-codex-limits")
    scenario, task = fake_scenario(tmp_path / "scenario", turns=2)
    spec = AttemptSpec(parse_cell("codex-high:fake"), 0, systems_file=systems, model_access=access)
    result = run_attempt(spec, backend=LocalBackend(cfg), config=cfg, scenario=scenario, task=task, grade=False)
    rec, p = result.record, result.paths
    assert rec["outcome"] == "graded", rec.get("error")
    assert all(t["exit_code"] == 0 for t in rec["turns"]), rec["turns"]

    # Applied: every request Codex made carries the declared effort.
    received = lines(p.root / "fake-provider.jsonl")
    assert received and all(r["body"]["reasoning"]["effort"] == "high" for r in received), \
        [r["body"].get("reasoning") for r in received]

    # On record: attempt.json as declared, each turn with its budget and Codex's own note.
    declared = json.loads(p.attempt_json.read_text())["adapter"]
    assert declared["system"] == "codex-high" and declared["harness"] == "agent_sandbox.harness_codex"
    assert (declared["model"], declared["reasoning_effort"]) == ("fake-gpt", "high")
    assert declared["harness_version"] is None  # local backend: not the image's pinned CLI
    assert declared["tools_denied"] == ["web_search"] and declared["fixed"]["request_max_retries"] == 2
    assert declared["max_turns"] is None and declared["max_output_tokens"] is None  # Codex's own defaults
    turns = lines(p.turns_jsonl)
    assert len(turns) == 2
    for t in turns:
        a = t["adapter"]
        assert {k: a[k] for k in ("harness", "model", "reasoning_effort")} == {
            "harness": "agent_sandbox.harness_codex", "model": "fake-gpt", "reasoning_effort": "high"}
        assert a["turn_timeout_s"] == t["budget_s"]
        assert any("fake-gpt" in n and "fallback metadata" in n for n in a["notes"]), a["notes"]
        assert t["usage"]["source"] == "gateway" and t["usage"]["requests"] >= 1  # observed, beside it
    assert [t["adapter"] for t in rec["turns"]] == [t["adapter"] for t in turns]

    page = render_attempt_page(p.root, {"attempt_id": rec["attempt_id"], "identity": {"cell": rec["cell"]}},
                               label="pytest", index_href="../index.html")
    section = page[page.index("Adapter settings and limits"):]
    assert "agent_sandbox.harness_codex" in section and "high" in section and "web_search" in section
