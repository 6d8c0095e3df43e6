"""No production module is over 600 lines (issue 9; the developers' guide's "small modules").

Production is every `.py` of the repository outside `tests/`, `runs/`, `images/base/` (a
generated build context) and the hidden tool folders (`.venv`, `.cache`, `.git`, the linters'
caches); `.ci/` is the CI's own code and counts. Task pack folders count too.
"""
from __future__ import annotations

from pathlib import Path

from repo_paths import REPO_ROOT

LIMIT = 600
SKIPPED = {Path("tests"), Path("runs"), Path("images/base")}
HIDDEN_KEPT = {".ci"}


def production_modules(root: Path = REPO_ROOT) -> list[Path]:
    """Every production `.py` under root, as paths relative to it, sorted."""
    found: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in folder.iterdir():
            rel = entry.relative_to(root)
            if entry.is_dir():
                hidden = entry.name.startswith(".") and entry.name not in HIDDEN_KEPT
                if hidden or entry.name == "__pycache__" or rel in SKIPPED:
                    continue
                stack.append(entry)
            elif entry.suffix == ".py" and entry.is_file():
                found.append(rel)
    return sorted(found)


def line_count(path: Path) -> int:
    """Lines as an editor numbers them (a missing final newline does not lose the last line)."""
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_walk_sees_production_and_skips_the_rest(tmp_path):
    for rel in ("pkg/a.py", "pkg/sub/b.py", ".ci/c.py", "tests/t.py", "runs/r.py",
                "images/base/x.py", "images/y.py", ".venv/v.py", "pkg/__pycache__/a.py", "pkg/d.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert production_modules(tmp_path) == [
        Path(p) for p in (".ci/c.py", "images/y.py", "pkg/a.py", "pkg/sub/b.py")
    ]
    real = production_modules()
    assert Path("orchestrator/backends/docker/sandbox.py") in real and Path("tasks/packs.py") in real
    assert not any(p.parts[0] == "tests" for p in real)


def test_no_production_module_over_600_lines():
    sizes = {rel: line_count(REPO_ROOT / rel) for rel in production_modules()}
    offenders = sorted((n, str(rel)) for rel, n in sizes.items() if n > LIMIT)
    assert not offenders, f"production modules over {LIMIT} lines (split them by what they hold):\n" + "\n".join(
        f"    {rel}: {n} lines" for n, rel in reversed(offenders)
    )
