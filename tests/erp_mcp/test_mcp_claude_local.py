"""The real Claude Code binary, scripted by the fake provider to call bb-erp's MCP tools, through
the `claude-code` harness and the model gateway against a real ERP and MCP server (local
processes): the harness loads the turn's MCP config (ERP_MCP_URL, the agent's token), Claude
Code offers the MCP tools to the model, runs the scripted tool calls, and the calls are in the
ERP's audit log under the agent's user.

The binary is the one of the pinned claude-agent-sdk wheel (as tests/model_gateway's local
Claude test takes it); as root it runs with the CLI's own IS_SANDBOX=1."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_server import model_turn_stack

from orchestrator.images import AGENT_CLAUDE_IMAGE, config
from orchestrator.images.wheelhouse import ensure_wheelhouse
from orchestrator.scenarios.cache import ensure_scenario

pytestmark = pytest.mark.slow
REAL_KEY = "sk-real-" + "m" * 32
VKEY = "pbv-" + "n" * 40
NOTE = {"to": "controller", "subject": "Sent by Claude Code over MCP", "body": "Scripted note."}


def claude_binary() -> Path:
    """The bundled claude of the pinned wheel, extracted once into the cache."""
    wheelhouse = ensure_wheelhouse(AGENT_CLAUDE_IMAGE.role, AGENT_CLAUDE_IMAGE.requirements)
    (wheel,) = wheelhouse.glob("claude_agent_sdk-*.whl")
    target = config.cache_dir() / "cli" / wheel.stem / "claude"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".partial-{os.getpid()}")
        with zipfile.ZipFile(wheel) as zf, zf.open(AGENT_CLAUDE_IMAGE.members[0][0]) as src, open(partial, "wb") as out:
            shutil.copyfileobj(src, out, length=1 << 20)
        partial.chmod(0o755)
        partial.rename(target)
    return target


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder the turn can reach (pytest's own are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="pb-claude-mcp-"))
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.heavy  # make test-heavy: CI runs a representative subset (the same path is covered in make test)
def test_claude_code_calls_mcp_tools(shared_tmp: Path) -> None:
    tmp = shared_tmp
    scenario = ensure_scenario("payment-run", 0)
    token, user = str(scenario.meta["agent_token"]), str(scenario.meta["agent_user"])
    script = {"match": "tools", "require_key": REAL_KEY, "steps": [
        {"content": [{"type": "text", "text": "Checking who I am."},
                     {"type": "tool_use", "name": "mcp__bb-erp__read_whoami", "input": {}}],
         "usage": {"input_tokens": 900, "output_tokens": 20}},
        {"content": [{"type": "text", "text": "Sending the note."},
                     {"type": "tool_use", "name": "mcp__bb-erp__msg_send", "input": {**NOTE, "Idempotency-Key": "claude-mcp-1"}}],
         "usage": {"input_tokens": 1000, "output_tokens": 30}},
        {"content": [{"type": "text", "text": "Done: note sent."}], "usage": {"input_tokens": 1100, "output_tokens": 5}}]}
    with model_turn_stack(tmp, scenario, script, provider="anthropic", model="fake-claude", attempt_id="local-mcp",
                          real_key=REAL_KEY, vkey=VKEY) as stack:
        mcp = stack.mcp
        turn_dir, home, env = stack.turn(tmp, "claude-code", ("claude", claude_binary()),
                                         "Send the controller a note through the bb-erp MCP tools.", token, VKEY,
                                         "fake-claude")
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"
        proc = subprocess.run([sys.executable, "-m", "agent_sandbox.turn", "--turn-dir", str(turn_dir)],
                              env=env, capture_output=True, text=True, timeout=400)
        out = turn_dir / "out"
        assert proc.returncode == 0, (proc.stderr[-2000:], (out / "stderr.txt").read_text()[-3000:])
        result = json.loads((out / "stdout.txt").read_text())
        assert result["type"] == "result" and result["is_error"] is False and result["result"] == "Done: note sent."
        received = stack.received()
        assert [r["step"] for r in received if r.get("step") is not None] == [0, 1, 2]
        # Claude Code offers this many MCP tools deferred (behind its ToolSearch), by name.
        first = json.dumps(received[0]["body"])
        assert "mcp__bb-erp__msg_send" in first and "mcp__bb-erp__read_whoami" in first
        # The tool results Claude Code sent back are the ERP's answers.
        last = json.dumps(received[-1]["body"]["messages"])
        assert user in last and "MSG-" in last
        agent = stack.agent_requests()
        assert [(r["method"], r["path"], r["actor"], r["outcome"]) for r in agent] == \
            [("GET", "/whoami", user, "ok"), ("POST", "/outbox", user, "ok")]
        assert agent[1]["idem_key"] == "claude-mcp-1" and json.loads(agent[1]["request"])["subject"] == NOTE["subject"]
        config_file = json.loads((home / ".pb-mcp.json").read_text())
        assert config_file["mcpServers"]["bb-erp"]["url"] == mcp.url
