"""The ledger, `attempts.jsonl`: one canonical JSON line per attempt, in ledger order.

The ledger is always rebuilt from the attempt folders (never appended to), so the same folders
give the same bytes: lines are canonical JSON (sorted keys, no spaces, UTF-8), in the identity's
order (`AttemptIdentity.sort_key`). A line is a `LedgerLine`, built from the folder's
`ResultRecord` (a result.json that is JSON but no record is a `LedgerError`). Each line carries
the attempt's identity, outcome and verdict, each check, breaches, probes, errors, the earlier tries of an infra error, per-turn exit
status/timeout/duration, usage, and SHA-256 of result.json, final.db and every workspace file.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.attempt.records import ResultRecord
from orchestrator.hashing import canonical_json, file_sha256, sha256_bytes
from orchestrator.identity import AttemptIdentity, retry_dirs

LEDGER_FILE = "attempts.jsonl"


def workspace_hashes(workspace: Path) -> dict[str, str]:
    """`{relative path: sha256}` of every file under the workspace (symlinks: of their target text)."""
    out: dict[str, str] = {}
    if not workspace.is_dir():
        return out
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace).as_posix()
        if path.is_symlink():
            out[rel] = "symlink:" + sha256_bytes(str(path.readlink()).encode())
        elif path.is_file():
            out[rel] = file_sha256(path) or ""
    return out


def _count(value: Any) -> int:
    """A count from a list (its length), a number, or a mapping with `count`/`total`."""
    if isinstance(value, bool) or value is None:
        return int(bool(value))
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, (list, tuple)):
        return len(value)
    if isinstance(value, dict):
        for key in ("count", "total", "n"):
            if isinstance(value.get(key), (int, float)):
                return int(value[key])
        return len(value)
    return 0


class LedgerError(ValueError):
    """An attempt folder's result.json is JSON but not a `ResultRecord`: never silently dropped."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure: the label holds records no runtime wrote


class LedgerTurn(BaseModel):
    """The ledger's view of one turn: number, date, exit code, timeout, wall time, usage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    date: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    usage: dict[str, Any]


class LedgerCheck(BaseModel):
    """One check of a result, without its detail."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None
    type: str | None
    required: bool
    passed: bool
    breach: bool


class LedgerRetry(BaseModel):
    """An earlier try of the attempt (`rep-<k>.try-<j>`): how it ended, what it recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    try_: int = Field(alias="try")
    outcome: str
    errors: list[Any]
    result_sha256: str | None


class LedgerHashes(BaseModel):
    """SHA-256 of result.json, final.db, the canonical database and every workspace file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    result_json: str
    final_db: str | None
    canonical_db: str | None
    workspace: dict[str, str]


class LedgerLine(BaseModel):
    """One line of `attempts.jsonl`: an attempt's identity, outcome, verdict and hashes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attempt_id: str
    run_id: str  # the try whose result this is (the engine objects' id)
    identity: dict[str, Any]  # AttemptIdentity.as_dict(): a cli attempt's has no interface
    isolation: str | None
    outcome: str
    passed: bool
    breach: bool
    checks: list[LedgerCheck]
    breaches: list[Any]
    breach_count: int
    probes: int
    writes: dict[str, int]
    fault_metrics: dict[str, Any] | None
    errors: list[Any]
    retries: list[LedgerRetry]
    turns: list[LedgerTurn]
    usage: dict[str, Any]
    timings: dict[str, float]
    hashes: LedgerHashes

    @property
    def ident(self) -> AttemptIdentity:
        """The attempt's identity."""
        return AttemptIdentity.from_dict(self.identity)

    def to_json(self) -> dict[str, Any]:
        """The line as JSON data (what `canonical_json` writes)."""
        return self.model_dump(mode="json", by_alias=True)


def read_result_record(folder: Path) -> tuple[bytes, ResultRecord] | None:
    """The bytes and record of a folder's result.json; None when it is missing or not JSON (a try
    cut short). Raises `LedgerError` for JSON that is not a result record."""
    path = folder / "result.json"
    if not path.is_file():
        return None
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    try:
        return raw, ResultRecord.model_validate(data)
    except ValidationError as exc:
        raise LedgerError(f"{path}: not a result record: {exc}") from None


def _errors(result: ResultRecord) -> list[Any]:
    return [result.error.to_json()] if result.error is not None else []


def _retry(index: int, folder: Path) -> LedgerRetry:
    read = read_result_record(folder)
    if read is None:
        # A try with no result.json was cut short (the orchestrator was killed mid-attempt).
        return LedgerRetry(**{"try": index, "outcome": "interrupted", "errors": [], "result_sha256": None})
    raw, result = read
    return LedgerRetry(**{"try": index, "outcome": result.outcome, "errors": _errors(result),
                          "result_sha256": sha256_bytes(raw)})


def build_line(ident: AttemptIdentity, folder: Path) -> LedgerLine | None:
    """The ledger line of one attempt from its folder, or None when it has no result.json."""
    read = read_result_record(folder)
    if read is None:
        return None
    raw, result = read
    if result.identity != ident:
        raise LedgerError(f"{folder}/result.json records attempt {result.attempt_id}, not {ident.attempt_id}")
    writes = result.writes
    return LedgerLine(
        attempt_id=ident.attempt_id,
        run_id=result.run_id,
        identity=ident.as_dict(),
        isolation=result.isolation,
        outcome=result.outcome,
        passed=result.passed if result.outcome == "graded" else False,
        breach=result.breach,
        checks=[LedgerCheck(name=c.get("name"), type=c.get("type"), required=bool(c.get("required", True)),
                            passed=bool(c.get("passed")), breach=bool(c.get("breach", False))) for c in result.checks],
        breaches=result.breaches,
        breach_count=len(result.breaches),
        probes=result.probes,
        writes={"total": _count(writes.get("total")), "self_reversed": _count(writes.get("self_reversed"))},
        fault_metrics=result.fault_metrics,
        errors=_errors(result),
        retries=[_retry(i + 1, p) for i, p in enumerate(retry_dirs(folder))],
        turns=[LedgerTurn(n=t.n, date=t.date, exit_code=t.exit_code, timed_out=t.timed_out,
                          duration_s=round(t.duration_s, 3), usage=t.usage) for t in result.turns],
        usage=result.usage,
        timings=result.timings,
        hashes=LedgerHashes(result_json=sha256_bytes(raw), final_db=file_sha256(folder / "final.db"),
                            canonical_db=result.hashes.canonical_db, workspace=workspace_hashes(folder / "workspace")),
    )


def build_ledger(runs_root: Path, label: str, plan: Iterable[AttemptIdentity]) -> list[dict[str, Any]]:
    """Ledger lines (as JSON data) for every planned attempt that has a result, in ledger order."""
    lines = []
    for ident in sorted(plan, key=AttemptIdentity.sort_key):
        line = build_line(ident, ident.folder(runs_root, label))
        if line is not None:
            lines.append(line.to_json())
    return lines


def ledger_text(lines: list[dict[str, Any]]) -> str:
    """The ledger file's exact text: one canonical line each, newline-terminated."""
    return "".join(canonical_json(line) + "\n" for line in lines)


def write_ledger(path: Path, lines: list[dict[str, Any]]) -> str:
    """Write the ledger atomically; return its SHA-256."""
    text = ledger_text(lines)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return sha256_bytes(text.encode("utf-8"))


def line_sort_key(line: dict[str, Any]) -> tuple:
    """The ledger order of a parsed line: its identity's `AttemptIdentity.sort_key` (the one
    definition of the order; a line without a readable identity sorts first)."""
    try:
        return AttemptIdentity.from_dict(line["identity"]).sort_key()
    except (KeyError, TypeError, ValueError):  # pydantic's ValidationError is a ValueError
        return ()
