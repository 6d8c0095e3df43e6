"""The agent image holds only agent_sandbox + httpx + pyyaml: check the import boundary."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "agent_sandbox"
ALLOWED_THIRD_PARTY = {"httpx", "yaml"}
HOST_ONLY = {"systems.py": {"pydantic"}}  # systems files are read on the host, never in the sandbox
# The MCP client (issue 17): the MCP SDK and its HTTP client are in the agent image; turn.py loads it only for MCP cells.
ALSO_ALLOWED = {"mcp_client.py": {"mcp", "httpx2"}}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_stdlib_httpx_yaml_and_itself() -> None:
    stdlib = set(sys.stdlib_module_names)
    for path in sorted(PACKAGE.rglob("*.py")):
        allowed = stdlib | ALLOWED_THIRD_PARTY | {"agent_sandbox", "__future__"} | HOST_ONLY.get(path.name, set()) | ALSO_ALLOWED.get(path.name, set())
        extra = imported_roots(path) - allowed
        assert not extra, f"{path.relative_to(PACKAGE.parent)} imports {sorted(extra)}"


def test_sandbox_entrypoints_do_not_load_host_packages() -> None:
    code = (
        "import sys, agent_sandbox.turn, agent_sandbox.erp_cli, agent_sandbox.client, agent_sandbox.prompt\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'erp_service', 'tasks', 'orchestrator'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
