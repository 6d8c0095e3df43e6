"""The ledger, `attempts.jsonl`: one canonical JSON line per attempt, in ledger order.

The ledger is always rebuilt from the attempt folders (never appended to), so the same folders
give the same bytes: lines are canonical JSON (sorted keys, no spaces, UTF-8), ordered by task,
system, condition, seed and repetition. Each line carries the attempt's identity, outcome and
verdict, each check, breaches, probes, errors, the earlier tries of an infra error, per-turn exit
status/timeout/duration, usage, and SHA-256 of result.json, final.db and every workspace file.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator.campaign.identity import (
    AttemptIdentity,
    attempt_dir,
    canonical_json,
    read_result,
    retry_dirs,
    sha256_bytes,
)
from orchestrator.hashing import file_sha256

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


def _first(d: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if key in d and d[key] is not None:
            return d[key]
    return default


def _turn(turn: dict[str, Any]) -> dict[str, Any]:
    """The ledger's view of one turn: number, date, exit code, timeout, wall time, usage."""
    duration = _first(turn, "duration_s", "wall_s", "duration", "elapsed_s")
    return {
        "n": turn.get("n"),
        "date": turn.get("date"),
        "exit_code": _first(turn, "exit_code", "exit_status", "exit"),
        "timed_out": bool(_first(turn, "timed_out", "timeout", default=False)),
        "duration_s": round(float(duration), 3) if isinstance(duration, (int, float)) else None,
        "usage": turn.get("usage"),
    }


def _check(check: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": check.get("name"),
        "type": check.get("type"),
        "required": bool(check.get("required", True)),
        "passed": bool(check.get("passed")),
        "breach": bool(check.get("breach", False)),
    }


def _errors(result: dict[str, Any]) -> list[Any]:
    err = result.get("error")
    errs = result.get("errors")
    out: list[Any] = []
    if err:
        out.append(err)
    if isinstance(errs, list):
        out.extend(errs)
    return out


def _retry(index: int, folder: Path) -> dict[str, Any]:
    raw = (folder / "result.json").read_bytes() if (folder / "result.json").is_file() else None
    result = read_result(folder) if raw is not None else None
    if raw is None or result is None:
        # A try with no result.json was cut short (the orchestrator was killed mid-attempt).
        return {"try": index, "outcome": "interrupted", "errors": [], "result_sha256": None}
    return {
        "try": index,
        "outcome": result.get("outcome"),
        "errors": _errors(result),
        "result_sha256": sha256_bytes(raw),
    }


def build_line(ident: AttemptIdentity, folder: Path) -> dict[str, Any] | None:
    """The ledger line of one attempt from its folder, or None when it has no result.json."""
    raw_path = folder / "result.json"
    if not raw_path.is_file():
        return None
    raw = raw_path.read_bytes()
    try:
        result = json.loads(raw)
    except ValueError:
        return None
    checks = [_check(c) for c in result.get("checks") or [] if isinstance(c, dict)]
    writes = result.get("writes") or {}
    res_hashes = result.get("hashes") or {}
    return {
        "attempt_id": ident.attempt_id,
        "result_attempt_id": result.get("attempt_id"),
        "identity": ident.as_dict(),
        "isolation": result.get("isolation"),
        "outcome": result.get("outcome"),
        "passed": bool(result.get("passed")) if result.get("outcome") == "graded" else False,
        "breach": bool(result.get("breach")),
        "checks": checks,
        "breaches": result.get("breaches") or [],
        "breach_count": _count(result.get("breaches")),
        "probes": _count(result.get("probes")),
        "writes": {"total": _count(writes.get("total")), "self_reversed": _count(writes.get("self_reversed"))},
        "fault_metrics": result.get("fault_metrics"),
        "errors": _errors(result),
        "retries": [_retry(i + 1, p) for i, p in enumerate(retry_dirs(folder))],
        "turns": [_turn(t) for t in result.get("turns") or [] if isinstance(t, dict)],
        "usage": result.get("usage") or {},
        "timings": result.get("timings") or {},
        "hashes": {
            "result_json": sha256_bytes(raw),
            "final_db": file_sha256(folder / "final.db"),
            "canonical_db": res_hashes.get("canonical_db"),
            "workspace": workspace_hashes(folder / "workspace"),
        },
    }


def build_ledger(runs_root: Path, label: str, plan: Iterable[AttemptIdentity]) -> list[dict[str, Any]]:
    """Ledger lines for every planned attempt that has a result, in ledger order."""
    lines = []
    for ident in sorted(plan, key=AttemptIdentity.sort_key):
        line = build_line(ident, attempt_dir(runs_root, label, ident))
        if line is not None:
            lines.append(line)
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
    except (KeyError, TypeError, ValueError):
        return ()
