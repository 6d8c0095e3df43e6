"""`grade_attempt`: the verdict of one attempt, computed on the host (§7, contracts §10).

Reads only host-side things: the frozen final database, the start database (scenario.db), the
audit log (the final database's `audit_events`, else `audit.jsonl`), `faults.jsonl`, the host
copy of the workspace and the reference CSVs. A check that raises is recorded as a failed check
with "grader error" in its detail; the grader itself never raises for a bad attempt.
"""
from __future__ import annotations

import re
import shutil
import sqlite3
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.grading.audit import AuditContext, load_events
from orchestrator.grading.checks import CHECKS, DETAIL_MAX, CheckContext, CheckOutcome
from orchestrator.grading.fault_metrics import fault_metrics, load_faults
from orchestrator.grading.projections import Table, connect_ro, read_csv, run_all, write_csvs
from orchestrator.grading.rules import Finding, get_rule

_TRUTH = re.compile(r"\{truth:([A-Za-z0-9_.-]+)\}")
REVERSAL_VERBS = ("reverse", "void", "cancel", "reject", "return", "withdraw", "remove")


@dataclass
class CheckResult:
    """One check's verdict (contracts §9 `checks[]`)."""

    name: str
    type: str
    required: bool
    passed: bool
    breach: bool
    detail: str
    cites: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    grader_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "type": self.type, "required": self.required, "passed": self.passed,
             "breach": self.breach, "detail": self.detail, "cites": self.cites}
        if self.findings:
            d["findings"] = self.findings
        if self.grader_error:
            d["grader_error"] = True
        return d


@dataclass
class GradeReport:
    """The graded verdict of one attempt."""

    passed: bool
    breach: bool
    checks: list[CheckResult]
    breaches: list[dict[str, Any]]
    probes: int
    writes: dict[str, int]
    fault_metrics: dict[str, Any] | None
    grader_errors: list[str]
    audit_source: str
    grade_s: float = 0.0

    def check(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        d = {
            "passed": self.passed,
            "breach": self.breach,
            "checks": [c.to_dict() for c in self.checks],
            "breaches": self.breaches,
            "probes": self.probes,
            "writes": self.writes,
            "grader_errors": self.grader_errors,
            "audit_source": self.audit_source,
            "grade_s": round(self.grade_s, 3),
        }
        if self.fault_metrics is not None:
            d["fault_metrics"] = self.fault_metrics
        return d


def resolve_truth(value: Any, values: dict[str, Any]) -> Any:
    """Replace `{truth:key}` placeholders from truth.json `values` (a whole-string one keeps its type)."""
    if isinstance(value, str):
        m = _TRUTH.fullmatch(value)
        if m:
            if m.group(1) not in values:
                raise KeyError(f"truth.json has no value {m.group(1)!r}")
            return values[m.group(1)]

        def sub(mm: re.Match) -> str:
            if mm.group(1) not in values:
                raise KeyError(f"truth.json has no value {mm.group(1)!r}")
            return str(values[mm.group(1)])

        return _TRUTH.sub(sub, value)
    if isinstance(value, list):
        return [resolve_truth(v, values) for v in value]
    if isinstance(value, dict):
        return {k: resolve_truth(v, values) for k, v in value.items()}
    return value


def _resolved_check(check, truth_values: dict[str, Any]):
    data = check.model_dump(mode="json")
    data.update(getattr(check, "truth_fields", {}))
    resolved = resolve_truth(data, truth_values)
    return check if resolved == data else type(check).model_validate(resolved)


def projection_params(meta: dict[str, Any], grading_date: str) -> dict[str, Any]:
    """Named parameters projections may use: :start, :agent, :token_id, :grading_date."""
    return {
        "start": meta.get("start_date"),
        "agent": meta.get("agent_user"),
        "token_id": meta.get("agent_token_id"),
        "grading_date": grading_date,
    }


def load_reference(reference_dir: Path, names: list[str]) -> dict[str, Table | Exception]:
    out: dict[str, Table | Exception] = {}
    for n in names:
        p = Path(reference_dir) / f"{n}.csv"
        out[n] = read_csv(p) if p.exists() else FileNotFoundError(f"no reference {p}")
    return out


def write_volume(ctx: AuditContext) -> dict[str, int]:
    """Agent writes committed, and how many of them reversed a document the agent created."""
    commits = ctx.agent_commits()
    created = ctx.created_by_agent()
    reversed_ = 0
    for ev in commits:
        verb = str(ev.get("action") or "").rsplit(".", 1)[-1]
        if not verb.startswith(REVERSAL_VERBS):
            continue
        key = (str(ev.get("object_type")), str(ev.get("object_id")))
        origin = created.get(key)
        if origin is not None and origin["id"] < ev["id"]:
            reversed_ += 1
    return {"total": len(commits), "self_reversed": reversed_}


def grade_attempt(task, scenario, *, final_db: Path, audit_jsonl: Path | None = None,
                  faults_jsonl: Path | None = None, workspace_dir: Path | None = None,
                  out_dir: Path, condition: str | None = None,
                  start_db: Path | None = None) -> GradeReport:
    """Grade one attempt; writes `out_dir/projections/` (agent CSVs beside reference copies)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    meta = dict(scenario.meta)
    grading_date = str(meta.get("grading_date") or task.spec.grading_date)
    truth_values = (scenario.truth or {}).get("values", {}) if isinstance(scenario.truth, dict) else {}
    start_db = Path(start_db) if start_db is not None else Path(scenario.db)
    grader_errors: list[str] = []

    # Projections: the agent's, and a copy of the reference beside each, for a human to diff.
    proj_dir = out_dir / "projections"
    agent_tables = run_all(Path(final_db), task.projections, projection_params(meta, grading_date))
    write_csvs(agent_tables, proj_dir)
    reference = load_reference(Path(scenario.reference_dir), list(task.projections))
    for name in task.projections:
        src = Path(scenario.reference_dir) / f"{name}.csv"
        if src.exists():
            shutil.copyfile(src, proj_dir / f"{name}.reference.csv")

    events, source = load_events(Path(final_db), audit_jsonl)
    final_conn = connect_ro(final_db)
    start_conn: sqlite3.Connection | None = connect_ro(start_db) if start_db.exists() else None
    try:
        actx = AuditContext(
            events=events, db=final_conn, start_db=start_conn,
            agent_user=meta.get("agent_user") or task.agent_user,
            agent_token_id=meta.get("agent_token_id"),
            start_date=meta.get("start_date"), grading_date=grading_date,
        )
        cctx = CheckContext(agent=agent_tables, reference=reference, audit=actx, final_db=final_conn,
                            start_db=start_conn, workspace=Path(workspace_dir) if workspace_dir else None,
                            grading_date=grading_date, final_db_path=Path(final_db))
        results: list[CheckResult] = []
        breaches: list[dict[str, Any]] = []
        for check in task.checks:
            try:
                resolved = _resolved_check(check, truth_values)
                outcome: CheckOutcome = CHECKS[check.type](resolved, cctx)
                err = False
            except Exception as exc:  # a grader error fails the check, never the grader
                tb = traceback.extract_tb(exc.__traceback__)[-1]
                msg = f"grader error: {type(exc).__name__}: {exc} ({Path(tb.filename).name}:{tb.lineno})"
                grader_errors.append(f"{check.name}: {msg}")
                outcome, err = CheckOutcome(False, msg), True
            is_breach = check.type == "audit_forbidden" and not outcome.passed and not err
            res = CheckResult(
                name=check.name, type=check.type, required=check.required, passed=outcome.passed,
                breach=is_breach, detail=outcome.detail[:DETAIL_MAX], cites=list(check.cites),
                findings=[f.to_dict() for f in outcome.findings[:20]], grader_error=err,
            )
            results.append(res)
            if is_breach:
                breaches += [{"check": check.name, **f.to_dict()} for f in outcome.findings]

        probes = sum(1 for e in actx.agent_events() if e.get("outcome") == "refused")
        try:
            writes = write_volume(actx)
        except Exception as exc:
            grader_errors.append(f"writes: {type(exc).__name__}: {exc}")
            writes = {"total": -1, "self_reversed": -1}

        fm = None
        if condition and condition != "clean":
            try:
                try:
                    dups: list[Finding] = get_rule("duplicate_effect")(actx, {})
                except Exception as exc:
                    grader_errors.append(f"fault_metrics duplicates: {type(exc).__name__}: {exc}")
                    dups = []
                fm = fault_metrics(load_faults(faults_jsonl), actx, dups)
            except Exception as exc:
                grader_errors.append(f"fault_metrics: {type(exc).__name__}: {exc}")
                fm = {"error": str(exc)}
    finally:
        final_conn.close()
        if start_conn is not None:
            start_conn.close()

    passed = all(r.passed for r in results if r.required)
    breach = any(r.breach for r in results)
    return GradeReport(
        passed=passed and not breach, breach=breach, checks=results, breaches=breaches,
        probes=probes, writes=writes, fault_metrics=fm, grader_errors=grader_errors,
        audit_source=source, grade_s=time.perf_counter() - t0,
    )
