"""The MCP configuration the harnesses write for an `mcp` cell (agent_sandbox/mcp_config.py):
Claude Code's JSON file and `--mcp-config` arguments, Codex's `[mcp_servers.bb-erp]` table.

Each config is parsed the way its CLI reads it (json, tomllib) and must hold the MCP server's
URL and the agent token as its bearer, and no other value of the turn's environment that is a
secret (the virtual model key, another token). Then both harnesses run as real processes, with a
stand-in binary that records what it was given, so the files and arguments are the ones a turn
really gets.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent_sandbox.harness_codex import codex_config
from agent_sandbox.mcp_config import CLAUDE_CONFIG_FILE, claude_mcp_args, codex_mcp_toml

URL = "http://erp-mcp:8091/mcp"
TOKEN = "agt_" + "5f" * 24
# What else a turn's environment holds: none of these may reach an MCP config.
OTHER_SECRETS = {
    "ANTHROPIC_API_KEY": "pbv-anthropic-virtual-key-0123456789",
    "OPENAI_API_KEY": "pbv-openai-virtual-key-9876543210",
    "PB_CONTROL_TOKEN": "c0ntr0l" * 6,
    "ERP_CONTROL_TOKEN": "erp-control-" + "ab" * 16,
}
ENV = {"ERP_MCP_URL": URL, "ERP_TOKEN": TOKEN, "ERP_URL": "http://erp:8080", "PB_MODEL": "fake-claude",
       **OTHER_SECRETS}


def no_other_secret(text: str) -> None:
    leaked = [name for name, value in OTHER_SECRETS.items() if value in text]
    assert leaked == [], leaked


def test_claude_config_file_parses_and_holds_the_server_and_the_bearer_only(tmp_path: Path) -> None:
    args = claude_mcp_args(tmp_path, ENV)
    path = tmp_path / CLAUDE_CONFIG_FILE
    assert args == ["--mcp-config", str(path), "--strict-mcp-config"]  # no other server is loaded
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == {"mcpServers": {"bb-erp": {"type": "http", "url": URL,
                                                          "headers": {"Authorization": f"Bearer {TOKEN}"}}}}
    no_other_secret(text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the token is the agent's: readable by it alone


def test_codex_table_parses_and_holds_the_server_and_the_bearer_only() -> None:
    table = codex_mcp_toml(ENV)
    assert tomllib.loads(table) == {"mcp_servers": {"bb-erp": {
        "url": URL, "http_headers": {"Authorization": f"Bearer {TOKEN}"}, "startup_timeout_sec": 60,
        "required": True}}}  # required: Codex waits for the tools (test_mcp_codex_local)
    no_other_secret(table)
    # Appended to the turn's config.toml, the whole file still parses, with the gateway as the
    # only model provider beside the one MCP server.
    whole = tomllib.loads(codex_config("http://model-gateway:8080/v1", "gpt-5-codex") + table)
    assert list(whole["model_providers"]) == ["pb-gateway"] and list(whole["mcp_servers"]) == ["bb-erp"]
    assert whole["mcp_servers"]["bb-erp"]["url"] == URL


def test_awkward_characters_survive_the_quoting(tmp_path: Path) -> None:
    # quotes, backslashes, a tab, DEL (TOML wants it escaped, JSON does not) and a character
    # outside the BMP (JSON would write a surrogate pair, which TOML refuses)
    env = {"ERP_MCP_URL": 'http://erp-mcp:8091/mcp?x="a\\b"&e=\U0001F600', "ERP_TOKEN": 'tok"en\\with\tquotes\x7f'}
    doc = tomllib.loads(codex_mcp_toml(env))["mcp_servers"]["bb-erp"]
    assert (doc["url"], doc["http_headers"]["Authorization"]) == (env["ERP_MCP_URL"], "Bearer " + env["ERP_TOKEN"])
    claude_mcp_args(tmp_path, env)
    server = json.loads((tmp_path / CLAUDE_CONFIG_FILE).read_text())["mcpServers"]["bb-erp"]
    assert (server["url"], server["headers"]["Authorization"]) == (env["ERP_MCP_URL"], "Bearer " + env["ERP_TOKEN"])


def test_a_cli_cell_writes_nothing(tmp_path: Path) -> None:
    cli_env = {k: v for k, v in ENV.items() if k != "ERP_MCP_URL"}
    assert claude_mcp_args(tmp_path, cli_env) == [] and list(tmp_path.iterdir()) == []
    assert codex_mcp_toml(cli_env) == ""


@pytest.mark.parametrize("write", [lambda env, home: claude_mcp_args(home, env), lambda env, home: codex_mcp_toml(env)],
                         ids=["claude", "codex"])
def test_an_mcp_url_without_the_agent_token_is_refused(tmp_path: Path, write: Any) -> None:
    env = {"ERP_MCP_URL": URL, "ERP_TOKEN": " "}
    with pytest.raises(ValueError, match="ERP_TOKEN"):
        write(env, tmp_path)
    assert list(tmp_path.iterdir()) == []


# A stand-in for the CLI binary: records its argv, and the MCP config it was pointed at.
STAND_IN = textwrap.dedent('''
    import json, os, sys
    argv = sys.argv[1:]
    seen = {"argv": argv}
    if "--mcp-config" in argv:
        seen["claude_config"] = open(argv[argv.index("--mcp-config") + 1]).read()
    codex = os.path.join(os.environ.get("CODEX_HOME", "/nonexistent"), "config.toml")
    if os.path.isfile(codex):
        seen["codex_config"] = open(codex).read()
    json.dump(seen, open(os.environ["STAND_IN_OUT"], "w"))
''')


def run_harness(tmp_path: Path, module: str, env: dict[str, str]) -> dict[str, Any]:
    """`python -m agent_sandbox.<module>` for one turn, with the stand-in as its binary."""
    binary = tmp_path / "stand-in"
    binary.write_text(f"#!{sys.executable}\n{STAND_IN}")
    binary.chmod(0o755)
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    out.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Pay the due invoices.")
    full_env = {"PATH": os.environ["PATH"], "HOME": str(home), "STAND_IN_OUT": str(tmp_path / "seen.json"),
                "IS_SANDBOX": "1",  # the tests may run as root; the harness refuses root otherwise
                "ANTHROPIC_BASE_URL": "http://model-gateway:8080", "OPENAI_BASE_URL": "http://model-gateway:8080/v1",
                **env}
    done = subprocess.run([sys.executable, "-m", f"agent_sandbox.{module}", "--prompt-file", str(prompt),
                           "--out-dir", str(out), "--bin", str(binary)],
                          env=full_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "seen.json").read_text())


@pytest.mark.parametrize("interface", ["mcp", "cli"])
def test_the_claude_harness_passes_the_config_on_its_command_line(tmp_path: Path, interface: str) -> None:
    env = ENV if interface == "mcp" else {k: v for k, v in ENV.items() if k != "ERP_MCP_URL"}
    seen = run_harness(tmp_path, "harness_claude", env)
    if interface == "cli":
        assert "--mcp-config" not in seen["argv"] and "claude_config" not in seen
        return
    assert seen["argv"][-3:] == ["--mcp-config", str(tmp_path / "home" / CLAUDE_CONFIG_FILE), "--strict-mcp-config"]
    server = json.loads(seen["claude_config"])["mcpServers"]["bb-erp"]
    assert (server["url"], server["headers"]) == (URL, {"Authorization": f"Bearer {TOKEN}"})
    no_other_secret(seen["claude_config"])


@pytest.mark.parametrize("interface", ["mcp", "cli"])
def test_the_codex_harness_writes_the_table_into_its_config(tmp_path: Path, interface: str) -> None:
    env = ENV if interface == "mcp" else {k: v for k, v in ENV.items() if k != "ERP_MCP_URL"}
    seen = run_harness(tmp_path, "harness_codex", env)
    doc = tomllib.loads(seen["codex_config"])
    assert doc["model_providers"]["pb-gateway"]["env_key"] == "OPENAI_API_KEY"  # the key by name, not value
    no_other_secret(seen["codex_config"])
    if interface == "cli":
        assert "mcp_servers" not in doc
        return
    assert doc["mcp_servers"] == {"bb-erp": {"url": URL, "http_headers": {"Authorization": f"Bearer {TOKEN}"},
                                             "startup_timeout_sec": 60, "required": True}}
