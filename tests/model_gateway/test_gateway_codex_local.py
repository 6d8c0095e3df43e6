"""The real Codex CLI 0.163 binary through the `codex` turn harness, the gateway and the fake
provider, all as local processes (no containers): its requests pass the gateway's request
policy unchanged (the harness turns web search off), a scripted tool call runs, and the
gateway refuses nothing.

The binary is the one of the PyPI wheel `openai-codex-cli-bin==0.163.0` (codex_cli_bin/bin/codex,
x86_64 musl, runs offline), the agent-codex image's pin (tests/support/codex_cli.py).
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from codex_cli import codex_binary

from agent_sandbox.systems import BUILTIN_SYSTEMS
from model_gateway.local import free_port, start_fake_provider, start_gateway
from model_gateway.policy import check_request

pytestmark = pytest.mark.slow
REAL_KEY = "sk-real-" + "c" * 32
VKEY = "pbv-" + "x" * 40


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pb-codex-local-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_codex_turn_through_the_gateway(shared_tmp: Path) -> None:
    tmp_path = shared_tmp
    marker = tmp_path / "workspace" / "marker.txt"
    script = {"match": "tools", "require_key": REAL_KEY, "steps": [
        {"content": [{"type": "text", "text": "Writing the marker."},
                     {"type": "tool_use", "name": "exec_command", "input": {"cmd": f"echo from-codex > {marker}"}}],
         "usage": {"input_tokens": 900, "output_tokens": 30}},
        {"content": [{"type": "text", "text": "Done: marker written."}], "usage": {"input_tokens": 1000, "output_tokens": 7}}]}
    (tmp_path / "fake").mkdir()
    (tmp_path / "gw").mkdir()
    fake = start_fake_provider(script, workdir=tmp_path / "fake")
    port = free_port()
    gateway = start_gateway({"attempt_id": "local", "hosts": [f"127.0.0.1:{port}"],
                             "providers": {"openai": {"base_url": fake.ready["url"], "models": ["fake-gpt"]}}},
                            {"upstream_keys": {"openai": REAL_KEY}, "virtual_keys": [VKEY]},
                            workdir=tmp_path / "gw", proxy_port=port)
    try:
        binary = codex_binary()
        turn_dir, home, workspace = tmp_path / "turn", tmp_path / "home", tmp_path / "workspace"
        for d in (turn_dir / "out", home, workspace, turn_dir / "bin"):
            d.mkdir(parents=True)
        os.symlink(binary, turn_dir / "bin" / "codex")
        spec = BUILTIN_SYSTEMS["codex"]
        assert spec.model is not None
        (turn_dir / "prompt.txt").write_text("Write the marker file.")
        (turn_dir / "system.json").write_text(json.dumps(spec.system_json({})))
        (turn_dir / "context.json").write_text(json.dumps({"turn": 1, "date": "2026-01-05", "budget_s": 120}))
        env = {"PATH": f"{turn_dir / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin",
               "HOME": str(home), "WORKSPACE": str(workspace),
               "ERP_URL": "http://127.0.0.1:9", "ERP_TOKEN": "unused", "TURN_BUDGET_S": "120",
               **spec.model.turn_env(gateway.ready["proxy"], VKEY, "fake-gpt")}
        proc = subprocess.run([sys.executable, "-m", "agent_sandbox.turn", "--turn-dir", str(turn_dir)],
                              env=env, capture_output=True, text=True, timeout=180)
        out = turn_dir / "out"
        assert proc.returncode == 0, (proc.stderr, (out / "stderr.txt").read_text()[-2000:])
        assert marker.read_text().strip() == "from-codex"  # the scripted tool call ran
        received = httpx.get(fake.ready["url"] + "/_fake/requests").json()["items"]
        assert [r["step"] for r in received][:2] == [0, 1]
        for r in received:
            assert r["path"] == "/v1/responses"
            types = {t["type"] for t in r["body"]["tools"]}
            assert "web_search" not in types and "function" in types  # web search off in the harness
            verdict = check_request("responses", copy.deepcopy(r["body"]))
            assert not verdict.changed and verdict.doc == r["body"]  # passes unchanged (store already false)
        rows = [json.loads(line) for line in gateway.files["usage_log"].read_text().splitlines()]
        assert rows and all(row["status"] == "ok" for row in rows), rows
    finally:
        gateway.stop()
        fake.stop()
