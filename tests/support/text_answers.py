"""Grading a written answer with a pack's real text checks, over a generated scenario's truth.

`text_checks(task, truth)` gives the pack's `text_claims` checks with their `{truth:…}`
placeholders filled; `verdicts(checks, filename, text, tmp, db)` writes the answer into a fresh
workspace and runs each check's registered grader function on it, with `db` as the final
database; `master_db(task, seed)` is one holding the scenario's parties (vendors, customers,
items: the names an alias may be part of) and an `ap_invoices` table to fill.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
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


def master_db(task: str, seed: int) -> sqlite3.Connection:
    """An in-memory final database with the scenario's vendors, customers and items, and an empty
    `ap_invoices (id, vendor_id, invoice_no, status)` for a test to fill."""
    scen = ensure_scenario(task, seed, reference=False)
    db = sqlite3.connect("file::memory:", uri=True)
    db.execute("ATTACH DATABASE ? AS scen", (f"file:{scen.dir / 'scenario.db'}?mode=ro",))
    for table in ("vendors", "customers", "items"):
        db.execute(f"CREATE TABLE {table} AS SELECT * FROM scen.{table}")
    db.execute("DETACH DATABASE scen")
    db.execute("CREATE TABLE ap_invoices (id TEXT PRIMARY KEY, vendor_id TEXT, invoice_no TEXT, status TEXT)")
    return db


def text_checks(task: str, truth_json: dict[str, Any], types: tuple[str, ...] = ("text_claims",)) -> dict[str, Any]:
    """The pack's checks of `types`, by name, resolved against `truth_json`."""
    values = truth_json.get("values", {})
    return {c.name: _resolved_check(c, values) for c in load_task(task).spec.checks if c.type in types}


def verdicts(checks: dict[str, Any], filename: str, text: str, tmp: Path,
             db: sqlite3.Connection | None = None) -> dict[str, tuple[bool, str]]:
    """{check name: (passed, detail)} for `text` saved as `filename` in an empty workspace, with
    `db` as the final database."""
    ws = tmp / "workspace"
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    (ws / filename).write_text(text, encoding="utf-8")
    ctx = CheckContext(agent={}, reference={}, audit=None, final_db=db, start_db=None,  # type: ignore[arg-type]
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
