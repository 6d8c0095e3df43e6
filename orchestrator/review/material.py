"""What a reviewer reads for one failed attempt, gathered from the label's files.

For each failed check: the check as the grader recorded it (detail, findings, cites); for a state
check, the agent's projection beside the reference (`projections/<name>.csv` and
`<name>.reference.csv`); the breaches the check raised with the audit rows behind them
(`audit.jsonl`); the handbook clauses it cites, with their text (the pack's clauses.yaml); and the
decision in force. For the attempt: the transcript, from `trajectory.json` (ATIF) where the
attempt has one, else None. Everything is read, nothing is written.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.jsonl import read_objects
from orchestrator.report.attempt_page import audit_ids
from orchestrator.report.label_page import check_projections
from orchestrator.review.decisions import Decision, attempt_folder, failed_checks, latest

STATE_TYPES = ("state_set", "state_values", "state_unchanged", "state_rows")
MAX_ROWS = 200
MAX_STEP_CHARS = 240
TRAJECTORY_FILE = "trajectory.json"


@dataclass
class CheckMaterial:
    """One failed check and what stands behind its verdict."""

    check: dict[str, Any]
    projection: str | None = None
    agent_rows: list[list[str]] = field(default_factory=list)      # header first
    reference_rows: list[list[str]] = field(default_factory=list)  # header first
    breaches: list[dict[str, Any]] = field(default_factory=list)
    audit_rows: list[dict[str, Any]] = field(default_factory=list)
    clauses: list[tuple[str, str]] = field(default_factory=list)   # (id, text); text "" when unknown
    decision: Decision | None = None

    @property
    def name(self) -> str:
        """The check's name."""
        return str(self.check.get("name"))

    def differing(self) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
        """(rows only the agent has, rows only the reference has)."""
        agent = {tuple(r) for r in self.agent_rows[1:]}
        ref = {tuple(r) for r in self.reference_rows[1:]}
        return agent - ref, ref - agent


@dataclass
class AttemptMaterial:
    """One failed attempt: its ledger line, folder, failed checks and transcript."""

    line: dict[str, Any]
    folder: Path
    checks: list[CheckMaterial]
    transcript: list[str] | None  # one text per ATIF step; None when there is no trajectory.json

    @property
    def attempt_id(self) -> str:
        """The attempt's id."""
        return str(self.line.get("attempt_id"))

    @property
    def where(self) -> str:
        """The attempt's folder under the label."""
        return attempt_folder(self.line)


def read_csv(path: Path) -> list[list[str]]:
    """A projection's rows (header first, at most MAX_ROWS data rows); empty when not recorded."""
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        return [row for _, row in zip(range(MAX_ROWS + 1), csv.reader(fh), strict=False)]


def clause_texts(task: str) -> dict[str, str]:
    """Clause id -> its handbook text (parameters filled) for a task; empty when the pack or its
    clauses.yaml is not in this checkout (a bundle reviewed elsewhere: the ids still show)."""
    try:
        from tasks.handbook import fill
        from tasks.registry import load_clauses

        pol = load_clauses(task)
        return {c.id: fill(c.text.strip(), pol.params, c.id) for c in pol.clauses}
    except Exception:  # noqa: BLE001 — a review of results whose pack is not here still shows the ids
        return {}


def transcript(folder: Path) -> list[str] | None:
    """One line per step of the attempt's trajectory.json (ATIF: source, message, tool calls,
    observation results), or None when there is none or it cannot be read."""
    path = folder / TRAJECTORY_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list):
        return None
    out = []
    for step in steps:
        if not isinstance(step, dict):
            continue
        parts = [str(step.get("source") or "?")]
        message = step.get("message")
        if isinstance(message, str) and message.strip():
            parts.append(message.strip())
        for call in step.get("tool_calls") or []:
            if isinstance(call, dict):
                parts.append(f"→ {call.get('function_name')}({json.dumps(call.get('arguments'), sort_keys=True)})")
        results = (step.get("observation") or {}).get("results") if isinstance(step.get("observation"), dict) else None
        for res in results or []:
            if isinstance(res, dict) and res.get("content"):
                parts.append(f"← {res.get('content')}")
        text = " ".join(" ".join(parts).split())
        out.append(text if len(text) <= MAX_STEP_CHARS else text[: MAX_STEP_CHARS - 1] + "…")
    return out


def gather(root: Path, line: dict[str, Any], decisions: list[Decision], *,
           projections: dict[str, str] | None = None, clauses: dict[str, str] | None = None) -> AttemptMaterial:
    """The material of one attempt of the label at `root` (see the module doc)."""
    folder = root / attempt_folder(line)
    result_path = folder / "result.json"
    result = json.loads(result_path.read_text(encoding="utf-8")) if result_path.is_file() else {}
    recorded = {str(c.get("name")): c for c in result.get("checks") or [] if isinstance(c, dict)}
    task = str((line.get("identity") or {}).get("task"))
    projections = check_projections(task) if projections is None else projections
    clauses = clause_texts(task) if clauses is None else clauses
    audit = {r.get("id"): r for r in read_objects(folder / "audit.jsonl")}
    breaches = [b for b in result.get("breaches") or [] if isinstance(b, dict)]
    now = latest(decisions)
    out = []
    for summary in failed_checks(line):
        name = str(summary.get("name"))
        check = {**summary, **recorded.get(name, {})}
        item = CheckMaterial(check=check, decision=now.get((str(line.get("attempt_id")), name)))
        if str(check.get("type")) in STATE_TYPES:
            item.projection = projections.get(name)
            if item.projection:
                item.agent_rows = read_csv(folder / "projections" / f"{item.projection}.csv")
                item.reference_rows = read_csv(folder / "projections" / f"{item.projection}.reference.csv")
        item.breaches = [b for b in breaches if b.get("check") == name]
        ids = sorted({i for b in item.breaches for i in audit_ids(b.get("refs"))})
        item.audit_rows = [audit[i] for i in ids if i in audit]
        item.clauses = [(str(cid), clauses.get(str(cid), "")) for cid in check.get("cites") or []]
        out.append(item)
    return AttemptMaterial(line=line, folder=folder, checks=out, transcript=transcript(folder))
