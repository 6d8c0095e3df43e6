"""End to end (issue 31): the built-in `codex` system on payment-run seed 0 in containers, with no
systems file: the real Codex CLI of the `agent-codex` image (taken out of the pinned
openai-codex-cli-bin wheel) in the agent container, through the model gateway on the Responses
API, against the fake provider on the egress side; graded like any other attempt.

The fake provider plays agent_sandbox/examples/fake-codex-payment-run.yaml with one step more:
Codex runs the escape suite's secrets probe (tests/support/escape_probe.py, mode `secrets`, the
same scan as test_escape_gateway's) through its own shell tool, so the probe sees Codex's own
process, its environment and the files of its fresh home. The provider key is a random stand-in
that the fake requires (`require_key`): the gateway sent it upstream, and the probe must not
find it anywhere in the agent container.
"""
from __future__ import annotations

import hashlib
import json
import secrets
import shlex
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_paths import REPO_ROOT
from runtime_support import remove_campaign

# make test-heavy (CI time): make test keeps the local real-Codex tests and the harness oracle.
pytestmark = [pytest.mark.docker, pytest.mark.heavy, pytest.mark.timeout(1500)]

EXAMPLES = REPO_ROOT / "agent_sandbox" / "examples"
PROBE = REPO_ROOT / "tests" / "support" / "escape_probe.py"
KEY_ENV = "PB_TEST_CODEX_UPSTREAM_KEY"
PROBE_OUT = "/workspace/probe-secrets.json"
WAITS = 6  # up to three more minutes for the probe's walk of the whole file system, on a loaded machine
STEPS = 4 + WAITS  # the example's three, the probe and the waits


@pytest.fixture()
def runtime(tmp_path, docker_client, images):
    """(config, backend) with a campaign label of its own; nothing of it may be left behind."""
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"pytest-codex-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    yield cfg, DockerBackend(cfg, client=docker_client)
    assert remove_campaign(docker_client, campaign) == []


def probe_command(token_sha256: list[str]) -> str:
    """The shell command Codex is asked to run: the escape probe's secrets scan, its source on
    stdin (the agent container holds no test code), its report into the workspace."""
    spec = json.dumps({"mode": "secrets", "token_sha256": token_sha256, "check_writes": False})
    return (f"PB_PROBE_SPEC={shlex.quote(spec)} python3 - --spec env:PB_PROBE_SPEC --out {PROBE_OUT} "
            f"<<'PROBE'\n{PROBE.read_text()}\nPROBE")


def access_file(tmp_path: Path, key: str) -> Path:
    script = yaml.safe_load((EXAMPLES / "fake-codex-payment-run.yaml").read_text())
    script["require_key"] = key
    probe = {"content": [{"type": "text", "text": "First a look around the container."},
                         {"type": "tool_use", "name": "exec_command",
                          "input": {"cmd": probe_command([hashlib.sha256(key.encode()).hexdigest()]),
                                    "yield_time_ms": 30000}}],
             "usage": {"input_tokens": 3150, "output_tokens": 420, "cache_read_tokens": 0}}
    # Codex's shell tool yields after at most 30 s and keeps the command running in its session:
    # the steps after the probe wait for its report (each returns as soon as it is there).
    wait = {"content": [{"type": "tool_use", "name": "exec_command",
                         "input": {"cmd": f"for i in $(seq 28); do test -s {PROBE_OUT} && break; sleep 1; done; "
                                          f"ls {PROBE_OUT}", "yield_time_ms": 30000}}],
            "usage": {"input_tokens": 200, "output_tokens": 30, "cache_read_tokens": 3150}}
    script["steps"][1:1] = [probe, *[wait] * WAITS]
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    doc = yaml.safe_load((EXAMPLES / "model-access-fake-codex.yaml").read_text())
    doc["providers"]["openai"].update(fake_script=str(tmp_path / "script.yaml"), key_env=KEY_ENV)
    path = tmp_path / "model-access.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_codex_payment_run_through_the_gateway(runtime, tmp_path, monkeypatch) -> None:
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell
    from orchestrator.inputs import load_inputs

    cfg, backend = runtime
    key = secrets.token_hex(32)  # hex64: the probe hashes such tokens
    monkeypatch.setenv(KEY_ENV, key)
    cell = parse_cell("codex:payment-run")
    inputs = load_inputs(cell, 0)
    spec = AttemptSpec(cell, 0, rep=1, model_access=access_file(tmp_path, key))  # no systems file
    result = run_attempt(spec, backend=backend, config=cfg, task=inputs.task, scenario=inputs.scenario)
    rec, p = result.record, result.paths
    assert rec["outcome"] == "graded", rec.get("error")
    assert rec["isolation"] == "docker" and isinstance(rec["passed"], bool) and rec["checks"]
    assert all(t["exit_code"] == 0 for t in rec["turns"]) and len(rec["turns"]) >= 2
    # The real Codex ran each turn: its JSON events, its version, the scripted calls executed.
    events = lines(p.turn_dir(1) / "out" / "stdout.txt")
    assert events[0]["type"] == "thread.started" and events[-1]["type"] == "turn.completed", events[-3:]
    commands = [e["item"]["command"] for e in events
                if e["type"] == "item.completed" and e["item"].get("type") == "command_execution"]
    assert any("erp whoami" in c for c in commands) and any("/ap-invoices" in c for c in commands), commands
    agent_token_id = inputs.scenario.meta["agent_token_id"]
    api = [e for e in lines(p.audit_jsonl) if e["channel"] == "api"]
    assert any(e["path"] == "/whoami" for e in api) and any(e["path"].startswith("/ap-invoices") for e in api)
    assert all(e["token_id"] == agent_token_id for e in api)
    # The usage log's token counts equal what the fake provider reported, call for call.
    rows = [r for r in lines(p.root / "gateway.jsonl") if r["status"] == "ok"]
    received = [r for r in lines(p.root / "fake-provider.jsonl") if r.get("usage") is not None]
    assert len(rows) == len(received) >= STEPS + len(rec["turns"]) - 1
    for got, sent in zip(rows, received, strict=True):
        u = sent["usage"]
        assert (got["input_tokens"], got["output_tokens"], got["cache_read_tokens"]) == (
            u.get("input_tokens", 0) + u.get("cache_read_tokens", 0), u.get("output_tokens", 0),
            u.get("cache_read_tokens", 0))
    # Every call went to the Responses API with web search off, and the fake got the real key
    # (require_key: any other key is a 401, which no row shows).
    assert all(r["path"] == "/v1/responses" and r["status"] == 200 for r in lines(p.root / "fake-provider.jsonl"))
    total = rec["usage"]
    assert total["source"] == "gateway" and total["requests"] == len(rows)
    assert total["output_tokens"] == sum(r["output_tokens"] for r in rows)
    # On record per turn: the image's pinned Codex, the model it served, Codex's own note that it
    # did not know the model's name (and ran on its fallback metadata).
    for t in lines(p.turns_jsonl):
        a = t["adapter"]
        assert (a["harness_version"], a["image"], a["model"]) == ("openai-codex-cli-bin==0.163.0", "agent-codex", "fake-gpt")
        assert any("fake-gpt" in n and "fallback metadata" in n for n in a["notes"]), a
    # The probe ran inside Codex's own shell, beside Codex: no key in the environment, any
    # process's environ or argv, or any file of the agent container.
    report = json.loads((p.root / "workspace" / Path(PROBE_OUT).name).read_text())
    assert report["files_scanned"] > 100
    assert any("codex" in proc and "exec" in proc for proc in report["processes"]), report["processes"]
    assert (report["token_env"], report["token_proc"], report["token_files"]) == ([], [], [])
    # No key, virtual or real, is written to any record of the attempt.
    blob = "\n".join(f.read_text(errors="replace") for f in p.root.rglob("*") if f.is_file() and f.suffix != ".db")
    assert "pbv-" not in blob and key not in blob
