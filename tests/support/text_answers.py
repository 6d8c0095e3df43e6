"""Grading a written answer with a pack's real text checks, over a generated scenario's truth.

`text_checks(task, truth)` gives the pack's `text_claims` checks with their `{truth:…}`
placeholders filled; `verdicts(checks, filename, text, tmp)` writes the answer into a fresh
workspace and runs each check's registered grader function on it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from orchestrator.grading.checks import CHECKS, CheckContext
from orchestrator.grading.grader import _resolved_check
from orchestrator.scenarios.cache import ensure_scenario
from tasks.registry import load_task


def truth(task: str, seed: int) -> dict[str, Any]:
    """truth.json of the pack's generated scenario for `seed` (built and cached if missing)."""
    scen = ensure_scenario(task, seed, reference=False)
    return json.loads((scen.dir / "truth.json").read_text())


def text_checks(task: str, truth_json: dict[str, Any], types: tuple[str, ...] = ("text_claims",)) -> dict[str, Any]:
    """The pack's checks of `types`, by name, resolved against `truth_json`."""
    values = truth_json.get("values", {})
    return {c.name: _resolved_check(c, values) for c in load_task(task).spec.checks if c.type in types}


def verdicts(checks: dict[str, Any], filename: str, text: str, tmp: Path) -> dict[str, tuple[bool, str]]:
    """{check name: (passed, detail)} for `text` saved as `filename` in an empty workspace."""
    ws = tmp / "workspace"
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    (ws / filename).write_text(text, encoding="utf-8")
    ctx = CheckContext(agent={}, reference={}, audit=None, final_db=None, start_db=None,  # type: ignore[arg-type]
                       workspace=ws, grading_date="2026-10-02")
    out = {}
    for name, check in checks.items():
        res = CHECKS[check.type](check, ctx)
        out[name] = (res.passed, res.detail)
    return out


def assert_table_sizes(correct: dict[str, Any], wrong: dict[str, tuple[Any, frozenset[str]]],
                       checks: tuple[str, ...]) -> None:
    """At least ten correct answers, and at least ten wrong ones aimed at each check."""
    assert len(correct) >= 10
    for check in checks:
        assert sum(check in fails for _, fails in wrong.values()) >= 10, check


def assert_passes_all(got: dict[str, tuple[bool, str]]) -> None:
    """Every check passed."""
    assert {c: r for c, r in got.items() if not r[0]} == {}


def assert_fails_exactly(got: dict[str, tuple[bool, str]], fails: frozenset[str]) -> None:
    """The checks in `fails` failed, and only those: what the answer gets right still passes."""
    assert {c for c in fails if got[c][0]} == set(), got
    assert {c for c, r in got.items() if c not in fails and not r[0]} == set(), got
