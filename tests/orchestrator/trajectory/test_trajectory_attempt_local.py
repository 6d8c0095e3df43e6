"""Trajectories of whole attempts on the local backend (real ERP, gateway and fake provider as host
processes; the test scenario, not graded): a command system that works like Claude Code — model
calls through the gateway, an `erp` request after each answer, Claude Code's session log and JSON
result in its output folder — writes a trajectory whose model steps are the usage log's rows and whose
ERP results are the audit log's agent requests, in order. When its session log leaves out one call
the gateway served, the attempt is marked `transcript_mismatch` naming the turn; the honest one is
not. A scripted policy's trajectory has its requests and no model steps."""
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

# Two model calls a turn, `erp whoami` after the first answer; the session log Claude Code would
# write (one assistant entry per call, the tool's result as a user entry), unless OMIT names a
# turn whose second call it leaves out.
AGENT = r'''
import datetime, json, os, subprocess, sys, urllib.request
out = sys.argv[1]
turn = json.load(open(os.path.join(os.path.dirname(out), "context.json")))["turn"]
def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
def call(n):
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
        data=json.dumps({"model": os.environ["PB_MODEL"], "max_tokens": 64, "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
                         "messages": [{"role": "user", "content": f"call {n}"}]}).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json", "anthropic-version": "2023-06-01"})
    return json.load(urllib.request.urlopen(req, timeout=30))
log = []
for n in (1, 2):
    body = call(n)
    u = body["usage"]
    entry = {"type": "assistant", "timestamp": now(), "version": "2.0.test", "message": {"id": body["id"], "model": body["model"],
             "role": "assistant", "content": body["content"], "usage": u}}
    if not (os.environ.get("OMIT") == str(turn) and n == 2):
        log.append(entry)
    for block in body["content"]:
        if block.get("type") == "tool_use":
            who = subprocess.run(["erp", "whoami"], capture_output=True, text=True).stdout
            log.append({"type": "user", "timestamp": now(), "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": block["id"], "content": who}]}})
os.makedirs(os.path.join(out, "claude-session"), exist_ok=True)
with open(os.path.join(out, "claude-session", "s.jsonl"), "w") as fh:
    fh.writelines(json.dumps(e) + "\n" for e in log)
print(json.dumps({"type": "result", "is_error": False, "result": "done", "num_turns": 2, "usage": {}}))
'''
TOOL = {"content": [{"type": "text", "text": "Let me check who I am."},
                    {"type": "tool_use", "name": "Bash", "input": {"command": "erp whoami"}}],
        "usage": {"input_tokens": 700, "output_tokens": 20, "cache_read_tokens": 300, "cache_write_tokens": 50}}
DONE = {"content": [{"type": "text", "text": "Done for today."}], "usage": {"input_tokens": 800, "output_tokens": 9, "cache_read_tokens": 1000}}


@pytest.fixture()
def local(tmp_path):
    from orchestrator.backends.local import LocalBackend
    from orchestrator.config import RuntimeConfig

    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-traj-local")
    return cfg, LocalBackend(cfg)


def _run(local: Any, tmp_path: Path, system: str) -> Any:
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    cfg, backend = local
    (tmp_path / "agent.py").write_text(AGENT)
    model = {"provider": "anthropic", "model": "fake-claude", "base_url_env": "ANTHROPIC_BASE_URL", "key_env": "ANTHROPIC_API_KEY"}
    entry = {"argv": [sys.executable, str(tmp_path / "agent.py"), "{out_dir}"], "usage": "claude-json", "model": model}
    systems = tmp_path / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"fake-claude-honest": entry,
                                                   "fake-claude-omits": entry | {"set_env": {"OMIT": "2"}}}}))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump({"match": "tools", "steps": [TOOL, DONE, TOOL, DONE]}))
    access = tmp_path / "access.yaml"
    access.write_text(yaml.safe_dump({"providers": {"anthropic": {"fake_script": "script.yaml", "models": ["fake-claude"]}}}))
    scenario, task = fake_scenario(tmp_path / "scenario", turns=2)
    spec = AttemptSpec(parse_cell(f"{system}:fake"), 0, systems_file=systems, model_access=access)
    return run_attempt(spec, backend=backend, config=cfg, scenario=scenario, task=task, grade=False)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_an_honest_harness_gives_a_trajectory_that_matches_the_usage_log_and_the_audit(local, tmp_path) -> None:
    result = _run(local, tmp_path, "fake-claude-honest")
    root = result.paths.root
    assert result.record["outcome"] == "graded", result.record.get("error")
    assert "transcript_mismatch" not in result.record  # the untouched attempt is not marked
    doc = json.loads((root / "trajectory.json").read_text())
    assert atif_problems(doc) == []
    assert trajectory_problems(root) == []
    usage = _lines(root / "gateway.jsonl")
    model_steps = [s for s in doc["steps"] if (s.get("extra") or {}).get("gateway")]
    assert len(usage) == len(model_steps) == 4
    for step, row in zip(model_steps, usage, strict=True):
        assert step["source"] == "agent" and step["llm_call_count"] == 1
        assert (step["metrics"]["prompt_tokens"], step["metrics"]["completion_tokens"], step["metrics"]["cached_tokens"]) == (
            row["prompt_tokens"], row["output_tokens"], row["cache_read_tokens"])
        assert step["extra"]["gateway"]["seq"] == row["seq"]
    api = [r for r in _lines(root / "audit.jsonl") if r["channel"] == "api"]
    erp = [(s, r["extra"]["erp"]) for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
           if "erp" in (r.get("extra") or {})]
    assert [e["audit_id"] for _, e in erp] == [r["id"] for r in api] and len(api) == 2
    for step, e in erp:  # each request sits under the tool call that made it: the first call of its turn
        assert step["tool_calls"][0]["function_name"] == "Bash" and step["message"] == "Let me check who I am."
        assert (e["method"], e["path"], e["outcome"]) == ("GET", "/whoami", "ok")
    # Each business day opens with a system step, then the prompt, then the model's steps.
    sources = [s["source"] for s in doc["steps"]]
    assert sources[:4] == ["system", "user", "agent", "agent"] and sources.count("user") == 2
    assert doc["extra"]["verdict"]["outcome"] == "graded" and doc["final_metrics"]["extra"]["model_calls"] == 4
    assert json.loads((root / "result.json").read_text())["hashes"]["trajectory"]
    # The report's attempt page shows it.
    from orchestrator.report.attempt_page import render_attempt_page

    page = render_attempt_page(root, {"attempt_id": result.attempt_id, "identity": {}}, label="l", index_href="i.html")
    assert "Let me check who I am." in page and "ERP #" in page and "Transcript mismatch" not in page


def test_a_transcript_that_omits_a_served_call_marks_the_attempt(local, tmp_path) -> None:
    result = _run(local, tmp_path, "fake-claude-omits")
    rec = result.record
    assert rec["outcome"] == "graded", rec.get("error")
    found = rec["transcript_mismatch"]
    assert found["gateway_calls"] == 4 and found["harness_calls"] == 3
    assert found["differences"][0] == "turn 2: the gateway metered 2 model call(s), the harness's transcript reports 1"
    doc = json.loads((result.paths.root / "trajectory.json").read_text())
    assert doc["extra"]["transcript_mismatch"] == found
    assert trajectory_problems(result.paths.root) == []  # the gateway's steps are all there, figures and all
    from orchestrator.report.attempt_page import render_attempt_page

    page = render_attempt_page(result.paths.root, {"attempt_id": result.attempt_id, "identity": {}}, label="l", index_href="i.html")
    assert "Transcript mismatch" in page and "turn 2: the gateway metered 2 model call(s)" in page
