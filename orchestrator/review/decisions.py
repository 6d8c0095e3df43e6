"""What a review reads and writes: every failed check of a label, and the decisions on them.

A failed check is one check of a scored attempt (graded or agent_error) that did not pass, or was
a breach. A decision is one JSON line appended to the label's `reviews.jsonl` (never rewritten):
the attempt and check, `agent_wrong` (the agent erred: the verdict stands) or `task_wrong` (an
acceptable alternative the check rejected, a handbook gap, a task bug: the input of a new task
version, whose `orchestrate regrade` then shows what changed), a note, who and when. A later line
on the same check supersedes an earlier one; both stay in the file.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

REVIEWS_FILE = "reviews.jsonl"
DECISIONS = ("agent_wrong", "task_wrong")
SCORED = frozenset({"graded", "agent_error"})


class ReviewError(ValueError):
    """A decision that cannot be recorded (no such attempt, a check that did not fail, ...)."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure


class ReviewDecision(BaseModel):
    """One line of reviews.jsonl."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attempt_id: str
    check: str
    decision: Literal["agent_wrong", "task_wrong"]
    note: str = Field(min_length=1)
    reviewer: str = Field(min_length=1)
    at: str  # UTC, ISO 8601


@dataclass
class FailedCheck:
    """One failed check of a scored attempt, with what a reviewer reads beside it."""

    attempt_id: str
    cell: str
    task: str
    seed: int
    rep: int
    check: str
    type: str | None
    breach: bool
    detail: str
    cites: list[str] = field(default_factory=list)
    folder: Path | None = None


def failed_checks(runs_root: Path, label: str) -> list[FailedCheck]:
    """Every failed check of the label's scored attempts, in ledger order (details from result.json)."""
    from orchestrator.identity import AttemptIdentity

    root = runs_root / label
    ledger = root / "attempts.jsonl"
    if not ledger.is_file():
        raise ReviewError(f"{ledger} not found: export the label first (`orchestrate export {label}`)")
    out: list[FailedCheck] = []
    for text in ledger.read_text().splitlines():
        line = json.loads(text)
        if line.get("outcome") not in SCORED:
            continue
        ident = AttemptIdentity.from_dict(line["identity"])
        folder = ident.folder(runs_root, label)
        result = json.loads((folder / "result.json").read_text()) if (folder / "result.json").is_file() else {}
        for chk in result.get("checks") or []:
            if chk.get("passed") and not chk.get("breach"):
                continue
            out.append(FailedCheck(attempt_id=line["attempt_id"], cell=ident.cell.text, task=ident.task, seed=ident.seed,
                                   rep=ident.rep, check=str(chk.get("name")), type=chk.get("type"),
                                   breach=bool(chk.get("breach")), detail=str(chk.get("detail") or ""),
                                   cites=list(chk.get("cites") or []), folder=folder))
    return out


def read_decisions(root: Path) -> list[ReviewDecision]:
    """Every decision of a label, in the order recorded."""
    path = root / REVIEWS_FILE
    if not path.is_file():
        return []
    return [ReviewDecision.model_validate_json(t) for t in path.read_text().splitlines() if t.strip()]


def latest(decisions: list[ReviewDecision]) -> dict[tuple[str, str], ReviewDecision]:
    """The standing decision per (attempt, check): the last one recorded."""
    return {(d.attempt_id, d.check): d for d in decisions}


def record_decision(runs_root: Path, label: str, *, attempt_id: str, check: str, decision: str, note: str,
                    reviewer: str | None = None, now: datetime | None = None) -> ReviewDecision:
    """Append one decision on a failed check of the label; raise `ReviewError` for anything else."""
    if decision not in DECISIONS:
        raise ReviewError(f"decision {decision!r}: use one of {', '.join(DECISIONS)}")
    failed = {(f.attempt_id, f.check) for f in failed_checks(runs_root, label)}
    if (attempt_id, check) not in failed:
        raise ReviewError(f"{attempt_id} / {check!r} is not a failed check of a scored attempt of {label!r}")
    who = reviewer or os.environ.get("USER") or ""
    if not who.strip():
        raise ReviewError("who is reviewing? give --by NAME")
    if not note.strip():
        raise ReviewError("a decision needs a note saying why")
    entry = ReviewDecision(attempt_id=attempt_id, check=check, decision=decision,
                           note=note.strip(), reviewer=who.strip(),
                           at=(now or datetime.now(UTC)).isoformat(timespec="seconds"))
    # O_APPEND: one write per line, the file is never rewritten (earlier decisions stay as they were)
    fd = os.open(runs_root / label / REVIEWS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (entry.model_dump_json() + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    return entry


def review_summary(failed: list[FailedCheck], decisions: list[ReviewDecision]) -> dict[str, Any]:
    """Per check: failed attempts, how many decided agent_wrong / task_wrong, how many undecided;
    and the task_wrong decisions with their notes (the input of a new task version)."""
    standing = latest(decisions)
    per: dict[str, dict[str, Any]] = {}
    for f in failed:
        entry = per.setdefault(f"{f.task}: {f.check}", {"failed": 0, "agent_wrong": 0, "task_wrong": 0, "undecided": 0})
        entry["failed"] += 1
        d = standing.get((f.attempt_id, f.check))
        entry[d.decision if d else "undecided"] += 1
    task_wrong = [d.model_dump() for d in standing.values() if d.decision == "task_wrong"]
    return {"checks": per, "task_wrong": task_wrong, "decisions": len(decisions)}
