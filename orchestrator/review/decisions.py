"""`reviews.jsonl`: the reviewers' decisions on a label's failed checks, append-only.

One JSON object per line::

    {"schema": 1, "attempt_id": ..., "task": ..., "task_version": ..., "check": ...,
     "decision": "agent_wrong" | "task_wrong", "kind": null | "alternative" | "handbook_gap" | "task_bug",
     "note": "...", "who": "...", "when": "2026-12-03T15:46:32Z"}

A later line on the same attempt × check supersedes the earlier ones (`latest`); no line is ever
rewritten or removed, so the history stays. A decision is refused (`ReviewError`, exit class
`bad_input`, nothing written) unless its attempt is in the label's ledger, its check is one of that
attempt's checks and failed there, and its decision and kind are known. `task_wrong` needs a kind
and a note (it is the input to a new task version: what to change, and why); `agent_wrong` takes
no kind. `problems` runs the same checks over a whole file for `export --verify`.

Imports only the standard library and `orchestrator.identity` (the ledger is read as
JSON): campaign.export, report, publish and the review command all import it.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

DECISIONS_FILE = "reviews.jsonl"
SCHEMA = 1
AGENT_WRONG = "agent_wrong"
TASK_WRONG = "task_wrong"
DECISIONS = (AGENT_WRONG, TASK_WRONG)
# Why the task, not the agent, was wrong (issue 33): a route the handbook allows that the check
# rejected, a handbook that did not say what the check demands, a bug in the task or its checks.
KINDS = ("alternative", "handbook_gap", "task_bug")
FIELDS = ("schema", "attempt_id", "task", "task_version", "check", "decision", "kind", "note", "who", "when")
WHEN_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
GRADED_OUTCOMES = ("graded", "agent_error")  # outcomes whose final state was graded (checks exist)


class ReviewError(ValueError):
    """A decision or a label that cannot be reviewed; the command exits bad_input and writes nothing."""

    exit_class = "bad_input"


@dataclass(frozen=True)
class Decision:
    """One reviewer's decision on one failed check of one attempt."""

    attempt_id: str
    task: str
    task_version: str
    check: str
    decision: str
    kind: str | None
    note: str
    who: str
    when: str
    schema: int = SCHEMA

    def to_line(self) -> str:
        """The decision as one JSON line (keys sorted, no trailing newline)."""
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)

    @property
    def key(self) -> tuple[str, str]:
        """attempt × check: a later decision with the same key supersedes this one."""
        return (self.attempt_id, self.check)

    @property
    def label(self) -> str:
        """`agent_wrong`, or `task_wrong (alternative)`."""
        return f"{self.decision} ({self.kind})" if self.kind else self.decision


def utc_now() -> str:
    """The current UTC time in the file's format (seconds)."""
    return dt.datetime.now(dt.UTC).strftime(WHEN_FORMAT)


def default_reviewer() -> str:
    """$USER (or $LOGNAME), else `unknown`."""
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "unknown"


def read_ledger(root: Path) -> list[dict[str, Any]]:
    """The label's ledger lines (attempts.jsonl); ReviewError when the label has none."""
    path = root / "attempts.jsonl"
    if not path.is_file():
        raise ReviewError(f"no ledger {path}: not a campaign label (run the campaign or `orchestrate export` first)")
    return [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]


def failed_checks(line: dict[str, Any]) -> list[dict[str, Any]]:
    """The checks that failed (or were a breach) in a graded attempt (none for one not graded)."""
    if line.get("outcome") not in GRADED_OUTCOMES:
        return []
    return [c for c in line.get("checks") or [] if isinstance(c, dict) and (not c.get("passed") or c.get("breach"))]


def failed_attempts(lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ledger lines with at least one failed check, in ledger order."""
    return [ln for ln in lines if failed_checks(ln)]


def _problems_of(row: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[str]:
    """What is wrong with one decision row against the ledger (empty when it is right)."""
    out = []
    missing = [f for f in FIELDS if f not in row]
    if missing:
        return [f"missing field(s) {', '.join(missing)}"]
    extra = sorted(set(row) - set(FIELDS))
    if extra:
        out.append(f"unknown field(s) {', '.join(extra)}")
    if row["schema"] != SCHEMA:
        out.append(f"schema {row['schema']!r} is not {SCHEMA}")
    for name in ("attempt_id", "task", "task_version", "check", "note", "who", "when"):
        if not isinstance(row[name], str):
            out.append(f"{name} is not a text")
    if out:
        return out
    if row["decision"] not in DECISIONS:
        out.append(f"unknown decision {row['decision']!r} (one of {', '.join(DECISIONS)})")
    elif row["decision"] == TASK_WRONG and row["kind"] not in KINDS:
        out.append(f"task_wrong needs a kind (one of {', '.join(KINDS)}), got {row['kind']!r}")
    elif row["decision"] == AGENT_WRONG and row["kind"] is not None:
        out.append(f"agent_wrong takes no kind, got {row['kind']!r}")
    if row["decision"] == TASK_WRONG and not row["note"].strip():
        out.append("task_wrong needs a note (what the task should accept or say, and why)")
    if not row["who"].strip():
        out.append("who is empty")
    try:
        dt.datetime.strptime(row["when"], WHEN_FORMAT)
    except ValueError:
        out.append(f"when {row['when']!r} is not a UTC time like 2026-12-03T15:46:32Z")
    line = by_id.get(row["attempt_id"])
    if line is None:
        out.append(f"attempt {row['attempt_id']!r} is not in the label's ledger")
        return out
    ident = line.get("identity") or {}
    if (row["task"], row["task_version"]) != (ident.get("task"), str(ident.get("task_version"))):
        out.append(f"task {row['task']} version {row['task_version']} is not the attempt's "
                   f"({ident.get('task')} version {ident.get('task_version')})")
    names = {str(c.get("name")): c for c in line.get("checks") or [] if isinstance(c, dict)}
    check = names.get(row["check"])
    if check is None:
        known = ", ".join(sorted(c for c, v in names.items() if not v.get("passed"))) or "none"
        out.append(f"check {row['check']!r} is not a check of attempt {row['attempt_id']} (its failed checks: {known})")
    elif check not in failed_checks(line):
        out.append(f"check {row['check']!r} did not fail in attempt {row['attempt_id']}: only failed checks are reviewed")
    return out


def new_decision(lines: list[dict[str, Any]], attempt: str, check: str, decision: str, kind: str | None,
                 note: str, who: str | None = None, when: str | None = None) -> Decision:
    """A decision checked against the ledger; ReviewError (naming every problem) when it is wrong.

    `attempt` is the attempt id or the attempt's folder under the label (`<cell>/seed-<n>/rep-<k>`).
    """
    by_id = {str(ln.get("attempt_id")): ln for ln in lines}
    line = find_line(lines, attempt)
    if line is None:
        raise ReviewError(f"unknown attempt {attempt!r}: not in the label's ledger (give an attempt id or its "
                          "folder, as `orchestrate review LABEL --list` prints them); nothing was recorded")
    ident = line.get("identity") or {}
    decided = Decision(attempt_id=str(line["attempt_id"]), task=str(ident.get("task")),
                       task_version=str(ident.get("task_version")), check=check, decision=decision,
                       kind=kind or None, note=note.strip(), who=(who or default_reviewer()).strip(),
                       when=when or utc_now())
    problems = _problems_of(asdict(decided), by_id)
    if problems:
        raise ReviewError("; ".join(problems) + "; nothing was recorded")
    return decided


def find_line(lines: list[dict[str, Any]], attempt: str) -> dict[str, Any] | None:
    """The ledger line of an attempt given by its id or its folder under the label, or None."""
    for ln in lines:
        if str(ln.get("attempt_id")) == attempt:
            return ln
    wanted = attempt.strip("/")
    return next((ln for ln in lines if attempt_folder(ln) == wanted), None)


def attempt_folder(line: dict[str, Any]) -> str:
    """The attempt's folder under the label, `<cell slug>/seed-<n>/rep-<k>` (orchestrator.identity)."""
    from orchestrator.identity import AttemptIdentity

    ident = AttemptIdentity.from_dict(line["identity"])
    return ident.folder(Path("/"), "x").relative_to("/x").as_posix()


def append(root: Path, decision: Decision) -> Path:
    """Append one decision to the label's file (locked, flushed to disk); never rewrites a line."""
    path = root / DECISIONS_FILE
    with path.open("a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            fh.write(decision.to_line() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    return path


def read(root: Path) -> list[Decision]:
    """Every decision of the label in file order (empty when none was recorded); ReviewError on a
    line that is not a decision (the file is then for `export --verify` to report, not to guess)."""
    path = root / DECISIONS_FILE
    if not path.is_file():
        return []
    out = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(text)
            out.append(Decision(**row))
        except (ValueError, TypeError) as exc:
            raise ReviewError(f"{path} line {n}: not a decision ({exc}); `orchestrate export --verify` names the problem") from None
    return out


def latest(decisions: Iterable[Decision]) -> dict[tuple[str, str], Decision]:
    """attempt × check -> the decision in force (the last one recorded)."""
    out: dict[tuple[str, str], Decision] = {}
    for d in decisions:
        out[d.key] = d
    return out


def counts_per_check(lines: list[dict[str, Any]], decisions: Iterable[Decision]) -> dict[str, dict[str, dict[str, Any]]]:
    """task -> check -> {failed, agent_wrong, task_wrong, unreviewed, kinds: {kind: n}} over every
    failed check of the ledger, each counted once by the decision in force."""
    now = latest(decisions)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for ln in lines:
        task = str((ln.get("identity") or {}).get("task"))
        for c in failed_checks(ln):
            entry = out.setdefault(task, {}).setdefault(str(c.get("name")), {
                "failed": 0, AGENT_WRONG: 0, TASK_WRONG: 0, "unreviewed": 0, "kinds": {}})
            entry["failed"] += 1
            d = now.get((str(ln.get("attempt_id")), str(c.get("name"))))
            if d is None:
                entry["unreviewed"] += 1
                continue
            entry[d.decision] += 1
            if d.kind:
                entry["kinds"][d.kind] = entry["kinds"].get(d.kind, 0) + 1
    return out


def problems(root: Path, lines: list[dict[str, Any]]) -> list[str]:
    """What `export --verify` finds wrong in the label's decisions file (empty when it has none):
    a line that is not canonical JSON of a decision, or one that names an attempt not in the ledger,
    a check the attempt does not have or that passed, an unknown decision or kind."""
    path = root / DECISIONS_FILE
    if not path.is_file():
        return []
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [f"{DECISIONS_FILE}: not UTF-8 ({exc})"]
    out = []
    if text and not text.endswith("\n"):
        out.append(f"{DECISIONS_FILE}: last line has no newline (a cut write)")
    by_id = {str(ln.get("attempt_id")): ln for ln in lines}
    for n, line in enumerate(text.splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError as exc:
            out.append(f"{DECISIONS_FILE} line {n}: not valid JSON ({exc})")
            continue
        if not isinstance(row, dict):
            out.append(f"{DECISIONS_FILE} line {n}: not a JSON object")
            continue
        out += [f"{DECISIONS_FILE} line {n}: {p}" for p in _problems_of(row, by_id)]
    return out
