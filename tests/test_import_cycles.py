"""No module of the tree imports another that imports it back (module-level imports).

The graph is read from the source with `ast` (nothing is imported): every `import` / `from ...
import` at module level (also inside a top-level `try`/`if`, but not under `if TYPE_CHECKING:`),
resolved to the modules of erp_service, agent_sandbox, orchestrator, tasks and networks.
Importing `a.b.c` also runs `a/__init__` and `a/b/__init__`, so those count too, except the
importer's own ancestors (a package importing its submodules is the normal layout). A cycle is a
strongly connected component of more than one module; the failure lists each one with its edges.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from repo_paths import REPO_ROOT

ROOT = REPO_ROOT
PACKAGES = ("erp_service", "agent_sandbox", "model_gateway", "orchestrator", "tasks", "networks", "erp_mcp", "erp_web")
# Which parts a part may import (helper preamble's import rule; docs/architecture.md).
ALLOWED = {
    "erp_service": set(),
    "agent_sandbox": set(),
    "model_gateway": set(),
    "networks": set(),
    "erp_mcp": set(),  # the MCP server talks to the ERP over HTTP only
    "erp_web": set(),  # the web UI too (the agent API only, with the signed-in user's token)
    "tasks": {"erp_service", "agent_sandbox"},
    "orchestrator": {"erp_service", "agent_sandbox", "model_gateway", "tasks", "networks"},
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        if not (ROOT / pkg).is_dir():
            continue
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if "-" in "".join(parts) or any(p.startswith(".") or p == "__pycache__" for p in parts):
                continue  # task pack folders like tasks/payment-run are not importable modules
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _top_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            ):
                continue
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _top_level(block)


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = name.split(".") if is_pkg else name.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    out: set[str] = set()
    for target in wanted:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if not target:
            continue
        # the target and the packages around it run on import, except the importer's own ancestors
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            mod = ".".join(parts[:i])
            if mod in modules and not (name == mod or name.startswith(mod + ".")):
                out.add(mod)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the tree's modules it imports at module level."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in _top_level(tree.body):
            edges |= _targets(name, path, node, modules)
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_real_imports():
    graph = import_graph()
    assert {"orchestrator.errors", "orchestrator.backends.services"} <= graph["orchestrator.backends.base"]
    assert "erp_service.kernel.schema" in graph["erp_service.canonical"]  # a relative import
    assert len(graph) > 100


def test_no_module_imports_another_that_imports_it_back():
    graph = import_graph()
    problems = []
    for comp in cycles(graph):
        members = set(comp)
        edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a] & members)]
        problems.append("cycle: " + ", ".join(comp) + "\n    " + "\n    ".join(edges))
    assert not problems, "\n".join(problems)


def test_parts_import_only_what_the_import_rule_allows():
    graph = import_graph()
    bad = sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if (pa := a.split(".")[0]) != (pb := b.split(".")[0]) and pb not in ALLOWED[pa]
    )
    assert not bad, "imports across parts that the import rule forbids:\n" + "\n".join(bad)
