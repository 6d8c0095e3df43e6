"""No module of the tree imports another that imports it back, at any depth.

The graph is read from the source with `ast` (nothing is imported): every `import` / `from ...
import` anywhere in a module (at module level, inside `try`/`if`, and inside functions and
classes: an import deferred into a function still ties the two modules together, it only hides
the tie until the call), and under `if TYPE_CHECKING:` too (never run, but a type-only import
back is still two modules that know each other: issue 34 counts them), resolved to the modules
of the tree's parts.
Importing `a.b.c` also runs `a/__init__` and `a/b/__init__`, so those count too, except the
importer's own ancestors (a package importing its submodules is the normal layout). A cycle is a
strongly connected component of more than one module; the failure lists each one with its edges.
`PENDING_CYCLES` names the cycles whose fix waits on files other work owns, with the fix.
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
# Cycles whose fix lies in files other work owns at the moment, each with its fix. The test fails
# when a listed cycle changes or is gone (then delete its entry), so no entry outlives its fix.
PENDING_CYCLES: dict[tuple[str, ...], str] = {}


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


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST, *, type_checking: bool = True) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under node, at any depth; the body of `if TYPE_CHECKING:` only when
    `type_checking` (the graph counts them; the runtime graph would not)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child) and not type_checking:
            for stmt in child.orelse:  # an `else:` of TYPE_CHECKING does run
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    yield stmt
                yield from _imports(stmt, type_checking=False)
        else:
            yield from _imports(child, type_checking=type_checking)


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
    """Module -> the tree's modules it imports (anywhere, `if TYPE_CHECKING:` included)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in _imports(tree):
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


def test_the_graph_counts_imports_in_functions_and_under_type_checking():
    source = """
import a
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import hidden
else:
    import shown_else
def f():
    import in_function
    if TYPE_CHECKING:
        import hidden_in_function
class C:
    def m(self):
        from deep import x
try:
    import in_try
except ImportError:
    pass
"""
    def names(type_checking: bool) -> list[str]:
        return sorted(alias.name if isinstance(node, ast.Import) else node.module or ""
                      for node in _imports(ast.parse(source), type_checking=type_checking) for alias in node.names)

    assert names(False) == ["a", "deep", "in_function", "in_try", "shown_else", "typing"]
    assert names(True) == ["a", "deep", "hidden", "hidden_in_function", "in_function", "in_try", "shown_else", "typing"]
    graph = import_graph()
    assert "orchestrator.images.tags" in graph["orchestrator.campaign.sources"]  # inside a function
    assert "orchestrator.scenarios.reference" in graph["orchestrator.scenarios.cache"]


def test_no_module_imports_another_that_imports_it_back():
    graph = import_graph()
    problems = []
    found = {tuple(comp) for comp in cycles(graph)}
    for comp in sorted(found - set(PENDING_CYCLES)):
        members = set(comp)
        edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a] & members)]
        problems.append("cycle: " + ", ".join(comp) + "\n    " + "\n    ".join(edges))
    gone = sorted(set(PENDING_CYCLES) - found)
    problems += [f"pending cycle {', '.join(c)} is gone or changed: remove it from PENDING_CYCLES" for c in gone]
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
