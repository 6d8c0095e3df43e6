"""Shared helpers of the campaign tests (no tests here): attempt folders shaped per contracts §9.

These build the *records* a real attempt leaves (result.json, final.db, workspace/); the end-to-end
test (test_campaign_e2e.py) produces the same from real attempts on the local backend.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from orchestrator.attempt.records import ErrorRecord, Hashes, ResultRecord, TurnRecord
from orchestrator.campaign.declaration import build_declaration, write_declaration
from orchestrator.campaign.spec import parse_cell_text
from orchestrator.identity import AttemptIdentity


def result_dict(ident: AttemptIdentity, *, outcome: str = "graded", passed: bool = True, breach: bool = False,
                probes: int = 0, durations: tuple[float, ...] = (1.0, 2.0), cost: float | None = None,
                fault_metrics: dict | None = None, error: dict[str, Any] | None = None, label: str = "L") -> dict[str, Any]:
    """A result.json of contracts §9, as the runtime writes it (a `ResultRecord`)."""
    checks = [
        {"name": "paid_right_invoices", "type": "state_set", "required": True, "passed": passed, "breach": False, "detail": ""},
        {"name": "no_duplicate_payment", "type": "audit_forbidden", "required": True, "passed": not breach,
         "breach": breach, "detail": ""},
    ]
    usage: dict[str, Any] = {"requests": 3}
    if cost is not None:
        usage["cost_usd"] = cost
    return ResultRecord(
        identity=ident, run_id=f"rt-{ident.task}-{ident.seed}-{ident.rep}", label=label, isolation="none",
        outcome=outcome, graded=outcome == "graded", passed=passed and not breach and outcome == "graded", breach=breach,
        checks=checks if outcome != "infra_error" else [],
        breaches=[{"rule": "duplicate_effect"}] if breach else [],
        probes=probes,
        writes={"total": 4, "self_reversed": 1},
        fault_metrics=fault_metrics,
        turns=[TurnRecord(n=i + 1, date=f"2026-10-0{i + 1}", budget_s=60.0, exit_code=0, timed_out=False,
                          killed_by_runtime=False, duration_s=d) for i, d in enumerate(durations)],
        usage=usage, timings={"total_s": sum(durations)},
        error=ErrorRecord(**{"kind": outcome, **error}) if error else None,
        hashes=Hashes(canonical_db="c" * 64),
    ).to_json()


def write_attempt(runs_root: Path, label: str, ident: AttemptIdentity, folder: Path | None = None, **kw: Any) -> Path:
    """Write an attempt folder: result.json, a real SQLite final.db, and a workspace file."""
    folder = folder or ident.folder(runs_root, label)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workspace").mkdir(exist_ok=True)
    (folder / "workspace" / "notes.md").write_text(f"handoff for seed {ident.seed}\n")
    db = sqlite3.connect(folder / "final.db")
    db.execute("create table if not exists t (x integer)")
    db.execute("insert into t values (?)", (ident.rep,))
    db.commit()
    db.close()
    (folder / "attempt.json").write_text(json.dumps({"images": {"pb-erp:latest": "sha256:" + "a" * 64}}))
    (folder / "result.json").write_text(json.dumps(result_dict(ident, label=label, **kw), indent=2))
    return folder


def declare(root: Path, label: str, cells: list[str], seeds: list[int], reps: int, version: str = "1",
            backend: str = "local") -> dict[str, Any]:
    """Write a campaign.json for the cells and return its content."""
    refs = [parse_cell_text(c) for c in cells]
    decl = build_declaration(
        label=label, cells=refs, seeds=seeds, reps=reps,
        task_info={r.task: {"version": version, "tree_sha256": "t" * 64} for r in refs},
        systems={r.system: {"kind": "policy"} for r in refs}, turn_timeout_s=None, backend=backend,
        volatile={"concurrency": 1},
    )
    write_declaration(root / label, decl)
    return decl.to_json()


class FakeJob:
    """Stands in for `run_attempt` in scheduler tests: writes a result by a rule, counts calls."""

    def __init__(self, runs_root: Path, label: str, outcomes: dict[tuple, list[str]] | None = None):
        self.runs_root, self.label = runs_root, label
        self.outcomes = outcomes or {}
        self.calls: list[tuple] = []
        self.lock = threading.Lock()

    def __call__(self, ident: AttemptIdentity, folder: Path, cancel: threading.Event) -> dict[str, Any]:
        key = (ident.system, ident.seed, ident.rep)
        with self.lock:
            self.calls.append(key)
            queue = self.outcomes.get(key, [])
            outcome = queue.pop(0) if queue else "graded"
        write_attempt(self.runs_root, self.label, ident, folder, outcome=outcome,
                      passed=ident.system == "oracle", error={"phase": "erp_start", "message": "boom"} if outcome == "infra_error" else None)
        return json.loads((folder / "result.json").read_text())
