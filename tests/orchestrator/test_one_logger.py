"""One logger in the orchestrator: structlog through `orchestrator.logs.get_logger` (issue 34).

Only `orchestrator/logs.py` touches the standard library's loggers (to configure where records
go); a module logging through `logging.getLogger` with %-formatting would write lines without
the bound attempt context and in another shape."""
from __future__ import annotations

import ast

from repo_paths import REPO_ROOT


def test_no_orchestrator_module_logs_through_logging_getlogger():
    offenders = []
    for path in sorted((REPO_ROOT / "orchestrator").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        if rel == "orchestrator/logs.py" or "__pycache__" in rel:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "getLogger"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "logging"):
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, "use orchestrator.logs.get_logger instead: " + ", ".join(offenders)
