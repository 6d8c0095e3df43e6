"""The real Codex CLI (the agent-codex image's pinned binary, tests/support/codex_cli.py), scripted
by the fake provider to call bb-erp's MCP tools, through the `codex` harness and the model gateway
against a real ERP and MCP server (local processes): the harness writes the turn's
`[mcp_servers.bb-erp]` table (ERP_MCP_URL, the agent's token), Codex offers the MCP tools to the
model, runs the scripted tool calls, and the calls are in the ERP's audit log under the agent's
user. The same path as test_mcp_claude_local for Claude Code (issue 31: MCP cells for Codex too).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from codex_cli import codex_binary
from mcp_server import model_turn_stack

from orchestrator.scenarios.cache import ensure_scenario

pytestmark = pytest.mark.slow
REAL_KEY = "sk-real-" + "x" * 32
VKEY = "pbv-" + "y" * 40
NOTE = {"to": "controller", "subject": "Sent by Codex over MCP", "body": "Scripted note."}
NAMESPACE = "mcp__bb_erp"  # Codex offers a server's tools as one `namespace` tool named after it
WHOAMI, SEND = f"{NAMESPACE}__read_whoami", f"{NAMESPACE}__msg_send"


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pb-codex-mcp-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def tool_names(body: dict) -> list[str]:
    """Every function name a Responses request offers, namespaces opened."""
    out: list[str] = []
    for tool in body.get("tools") or []:
        if tool.get("type") == "function":
            out.append(tool["name"])
        for inner in tool.get("tools") or []:
            out.append(f"{tool.get('name', '')}__{inner.get('name', '')}")
    return out


@pytest.mark.heavy  # make test-heavy, as test_mcp_claude_local (about 80 s on a loaded 2-core machine)
def test_codex_calls_mcp_tools(shared_tmp: Path) -> None:
    tmp = shared_tmp
    scenario = ensure_scenario("payment-run", 0)
    token, user = str(scenario.meta["agent_token"]), str(scenario.meta["agent_user"])
    script = {"match": "tools", "require_key": REAL_KEY, "steps": [
        {"content": [{"type": "text", "text": "Checking who I am."},
                     {"type": "tool_use", "namespace": NAMESPACE, "name": "read_whoami", "input": {}}],
         "usage": {"input_tokens": 900, "output_tokens": 20}},
        {"content": [{"type": "text", "text": "Sending the note."},
                     {"type": "tool_use", "namespace": NAMESPACE, "name": "msg_send",
                      "input": {**NOTE, "Idempotency-Key": "codex-mcp-1"}}],
         "usage": {"input_tokens": 1000, "output_tokens": 30}},
        {"content": [{"type": "text", "text": "Done: note sent."}], "usage": {"input_tokens": 1100, "output_tokens": 5}}]}
    with model_turn_stack(tmp, scenario, script, provider="openai", model="fake-gpt", attempt_id="local-codex-mcp",
                          real_key=REAL_KEY, vkey=VKEY) as stack:
        turn_dir, _home, env = stack.turn(tmp, "codex", ("codex", codex_binary()),
                                          "Send the controller a note through the bb-erp MCP tools.", token, VKEY,
                                          "fake-gpt")
        proc = subprocess.run([sys.executable, "-m", "agent_sandbox.turn", "--turn-dir", str(turn_dir)],
                              env=env, capture_output=True, text=True, timeout=400)
        out = turn_dir / "out"
        received = stack.received()
        offered = tool_names(received[0]["body"]) if received else []
        assert proc.returncode == 0, (proc.stderr[-2000:], (out / "stderr.txt").read_text()[-3000:])
        # Codex offers the MCP server's tools to the model, by name.
        assert WHOAMI in offered and SEND in offered, offered
        assert [r["step"] for r in received if r.get("step") is not None] == [0, 1, 2]
        # The tool results Codex sent back are the ERP's answers.
        last = json.dumps(received[-1]["body"]["input"])
        assert user in last and "MSG-" in last
        agent = stack.agent_requests()
        assert [(r["method"], r["path"], r["actor"], r["outcome"]) for r in agent] == \
            [("GET", "/whoami", user, "ok"), ("POST", "/outbox", user, "ok")]
        assert agent[1]["idem_key"] == "codex-mcp-1" and json.loads(agent[1]["request"])["subject"] == NOTE["subject"]
