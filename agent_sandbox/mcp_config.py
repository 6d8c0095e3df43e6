"""The MCP configuration a harness writes into the turn's fresh home (issue 17).

For a cell of the `mcp` interface the runtime sets `ERP_MCP_URL` (the attempt's MCP server,
`http://erp-mcp:8091/mcp` in containers) beside `ERP_TOKEN`; each harness turns them into its
own configuration, naming the server `bb-erp` and sending the agent's token as its bearer:

- Claude Code: `$HOME/.pb-mcp.json` (`{"mcpServers": {"bb-erp": {"type": "http", ...}}}`),
  passed as `--mcp-config FILE --strict-mcp-config` (no other server is loaded);
- Codex: a `[mcp_servers.bb-erp]` table in `~/.codex/config.toml` (streamable HTTP `url` and
  `http_headers`, `required`); Codex 0.163 offers the server's tools as one `namespace` tool,
  `mcp__bb_erp`, whose functions the model calls with that namespace.

Without `ERP_MCP_URL` (a `cli` cell) nothing is written and the command lines are unchanged.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

ENV_MCP_URL = "ERP_MCP_URL"
SERVER_NAME = "bb-erp"
CLAUDE_CONFIG_FILE = ".pb-mcp.json"


def mcp_target(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(MCP URL, agent token) when the turn has an MCP server, else None."""
    url, token = env.get(ENV_MCP_URL, "").strip(), env.get("ERP_TOKEN", "").strip()
    if not url:
        return None
    if not token:
        raise ValueError(f"{ENV_MCP_URL} is set but ERP_TOKEN is not: the MCP server needs the agent's token")
    return url, token


def claude_config(url: str, token: str) -> dict[str, object]:
    """Claude Code's MCP config: one streamable HTTP server with the agent's bearer token."""
    return {"mcpServers": {SERVER_NAME: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}}}


def claude_mcp_args(home: Path, env: Mapping[str, str]) -> list[str]:
    """Write the config into `home` and return the command-line arguments that load it ([] for cli)."""
    target = mcp_target(env)
    if target is None:
        return []
    path = home / CLAUDE_CONFIG_FILE
    path.write_text(json.dumps(claude_config(*target), indent=1) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return ["--mcp-config", str(path), "--strict-mcp-config"]


def toml_string(value: str) -> str:
    """`value` as a TOML basic string. JSON's escapes are TOML's, but for two: a character
    outside the BMP would be a JSON surrogate pair (invalid TOML), so characters are kept as
    UTF-8; and DEL, which JSON leaves bare, TOML requires escaped."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def codex_mcp_toml(env: Mapping[str, str]) -> str:
    """The `[mcp_servers.bb-erp]` table of Codex's config.toml ("" for cli)."""
    target = mcp_target(env)
    if target is None:
        return ""
    url, token = target
    return "\n".join([
        f'[mcp_servers.{toml_string(SERVER_NAME)}]',
        f"url = {toml_string(url)}",
        f"http_headers = {{ Authorization = {toml_string('Bearer ' + token)} }}",
        "startup_timeout_sec = 60",
        # Required: Codex 0.163 otherwise sends its first requests before the server's tools are
        # listed (the model never sees them), and a server that cannot start fails the turn
        # instead of leaving an `mcp` cell without its interface.
        "required = true",
        "",
    ])
