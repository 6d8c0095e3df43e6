"""agent_sandbox needs only the standard library and pyyaml (the MCP client aside): check the
import boundary. The `erp` command starts a process per call, so a heavy import is paid at every
call; the test below also bounds what `erp` loads."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "agent_sandbox"
ALLOWED_THIRD_PARTY = {"yaml"}
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


def test_only_stdlib_yaml_and_itself() -> None:
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


def test_the_erp_command_loads_nothing_but_the_standard_library() -> None:
    """What `erp` imports is paid at every call (a process per call): no third-party package,
    not even the pyyaml the rest of the package may use."""
    code = (
        "import sys; import agent_sandbox.erp_cli\n"
        "roots = {m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - {'agent_sandbox'}\n"
        "print(','.join(sorted(r for r in roots if not r.startswith('_'))))\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent)
    assert out.stdout.strip() == ""
