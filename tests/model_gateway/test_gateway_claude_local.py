"""The real Claude Code binary through the `claude-code` turn harness, the gateway and the fake
provider, all as local processes (no containers): the quick regression of the harness.

The binary is taken out of the pinned claude-agent-sdk wheel in the images' wheelhouse (the
same file the agent-claude image carries). Claude Code refuses to skip permissions as root; the
test suite runs as root with its interpreter under /root, which an unprivileged child cannot
exec, so here the CLI's own IS_SANDBOX=1 lets it run as root. The container test
(test_gateway_e2e.py) runs it as the non-root agent user, as every attempt does.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_sandbox.systems import BUILTIN_SYSTEMS
from model_gateway.local import free_port, start_fake_provider, start_gateway
from model_gateway.policy import check_request
from orchestrator.images import AGENT_CLAUDE_IMAGE, config
from orchestrator.images.wheelhouse import ensure_wheelhouse

pytestmark = pytest.mark.slow
REAL_KEY = "sk-real-" + "q" * 32
VKEY = "pbv-" + "w" * 40


def claude_binary() -> Path:
    """The bundled claude of the pinned wheel, extracted once into the cache."""
    wheelhouse = ensure_wheelhouse(AGENT_CLAUDE_IMAGE.role, AGENT_CLAUDE_IMAGE.requirements)
    (wheel,) = wheelhouse.glob("claude_agent_sdk-*.whl")
    target = config.cache_dir() / "cli" / wheel.stem / "claude"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        with zipfile.ZipFile(wheel) as zf, zf.open(AGENT_CLAUDE_IMAGE.members[0][0]) as src, open(partial, "wb") as out:
            shutil.copyfileobj(src, out, length=1 << 20)
        partial.chmod(0o755)
        partial.rename(target)
    return target


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder the unprivileged turn can reach (pytest's own are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="pb-claude-local-"))
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_claude_code_turn_through_the_gateway(shared_tmp: Path) -> None:
    tmp_path = shared_tmp
    marker = tmp_path / "workspace" / "marker.txt"
    script = {"match": "tools", "require_key": REAL_KEY, "steps": [
        {"content": [{"type": "text", "text": "Writing the marker."},
                     {"type": "tool_use", "name": "Bash",
                      "input": {"command": f"echo from-claude > {marker} ", "description": "marker"}}],
         "usage": {"input_tokens": 2000, "output_tokens": 50, "cache_read_tokens": 100, "cache_write_tokens": 20}},
        {"content": [{"type": "text", "text": "Done: marker written."}],
         "usage": {"input_tokens": 2300, "output_tokens": 9}}]}
    (tmp_path / "fake").mkdir()
    (tmp_path / "gw").mkdir()
    fake = start_fake_provider(script, workdir=tmp_path / "fake")
    port = free_port()
    gateway = start_gateway({"attempt_id": "local", "hosts": [f"127.0.0.1:{port}"],
                             "providers": {"anthropic": {"base_url": fake.ready["url"], "models": ["fake-claude"]}}},
                            {"upstream_keys": {"anthropic": REAL_KEY}, "virtual_keys": [VKEY]},
                            workdir=tmp_path / "gw", proxy_port=port)
    try:
        binary = claude_binary()
        turn_dir, home, workspace = tmp_path / "turn", tmp_path / "home", tmp_path / "workspace"
        for d in (turn_dir / "out", home, workspace):
            d.mkdir(parents=True)
        (turn_dir / "bin").mkdir()
        os.symlink(binary, turn_dir / "bin" / "claude")
        spec = BUILTIN_SYSTEMS["claude-code"]
        assert spec.model is not None
        (turn_dir / "prompt.txt").write_text("Write the marker file.")
        (turn_dir / "system.json").write_text(json.dumps(spec.system_json({})))
        (turn_dir / "context.json").write_text(json.dumps({"turn": 1, "date": "2026-01-05", "budget_s": 120}))
        env = {"PATH": f"{turn_dir / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin",
               "HOME": str(home), "WORKSPACE": str(workspace),
               "ERP_URL": "http://127.0.0.1:9", "ERP_TOKEN": "unused", "TURN_BUDGET_S": "120",
               **spec.model.turn_env(gateway.ready["proxy"], VKEY, "fake-claude")}
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"
        proc = subprocess.run([sys.executable, "-m", "agent_sandbox.turn", "--turn-dir", str(turn_dir)],
                              env=env, capture_output=True, text=True, timeout=180)
        out = turn_dir / "out"
        assert proc.returncode == 0, (proc.stderr, (out / "stderr.txt").read_text()[-2000:])
        result = json.loads((out / "stdout.txt").read_text())  # the turn's transcript
        assert result["type"] == "result" and result["is_error"] is False and result["result"] == "Done: marker written."
        assert marker.read_text().strip() == "from-claude"  # the scripted Bash tool call ran
        received = httpx.get(fake.ready["url"] + "/_fake/requests").json()["items"]
        assert [r["step"] for r in received] == [0, 1]
        assert all(r["path"] == "/v1/messages" and r["query"] == "beta=true" for r in received)
        assert all(r["headers"]["x-api-key"] == REAL_KEY and r["body"]["stream"] is True for r in received)
        assert len(received[0]["body"]["tools"]) >= 10 and "anthropic-beta" in received[0]["headers"]
        # The harness offers no tool that reaches outside (WebSearch, WebFetch), and every request
        # Claude Code sends passes the gateway's request policy unchanged.
        names = {t.get("name") for r in received for t in r["body"].get("tools", [])}
        assert "Bash" in names and not names & {"WebSearch", "WebFetch"}
        for r in received:
            verdict = check_request("messages", copy.deepcopy(r["body"]))
            assert not verdict.changed and verdict.doc == r["body"]
        rows = [json.loads(line) for line in gateway.files["usage_log"].read_text().splitlines()]
        assert [(r["status"], r["input_tokens"], r["output_tokens"]) for r in rows] == [("ok", 2000, 50), ("ok", 2300, 9)]
        usage = json.loads((out / "usage.json").read_text())  # Claude Code's own figures: the cross-check
        assert usage["input_tokens"] == sum(r["prompt_tokens"] for r in rows) == 2000 + 100 + 20 + 2300
        assert usage["output_tokens"] == sum(r["output_tokens"] for r in rows) == 59
        assert json.loads((home / ".claude.json").read_text())["hasCompletedOnboarding"] is True
        for text in ((out / "stdout.txt").read_text(), (out / "stderr.txt").read_text()):
            assert REAL_KEY not in text and VKEY not in text
    finally:
        gateway.stop()
        fake.stop()
