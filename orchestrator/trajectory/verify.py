"""A trajectory checked against the records it was built from (`export --verify`, issue 32).

The gateway's usage log, the ERP's audit log and result.json are the record; trajectory.json is a
view of them with the harness's words added. So, in an attempt folder or a publication bundle:

- the file is valid ATIF v1.7;
- its usage-log steps are the usage log's rows, every one, in order, each with the row's figures (prompt,
  completion, cached and cache-write tokens, cost, model, status);
- its ERP results are the audit log's agent requests, every one, in order, each with the row's
  method, path, outcome, status and error code;
- its totals are the usage log's, and its verdict, checks and transcript mismatch are result.json's.

Altering, dropping, adding or reordering one step fails with a problem naming the step.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.jsonl import read_objects
from orchestrator.trajectory.atif import atif_problems
from orchestrator.trajectory.build import final_metrics_of, verdict_metadata
from orchestrator.trajectory.mismatch import FORWARDED

ERP_KEYS = ("method", "path", "outcome", "status", "error_code")


def _usage_steps(steps: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return [(s["step_id"], s) for s in steps if isinstance((s.get("extra") or {}).get("gateway"), dict)]


def _erp_results(steps: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for s in steps:
        for res in (s.get("observation") or {}).get("results") or []:
            erp = (res.get("extra") or {}).get("erp") if isinstance(res, dict) else None
            if isinstance(erp, dict):
                out.append((s["step_id"], erp))
    return out


def _step_vs_row(sid: int, step: dict[str, Any], row: dict[str, Any]) -> list[str]:
    gw = step["extra"]["gateway"]
    problems = []
    if (gw.get("seq"), gw.get("status")) != (row.get("seq"), row.get("status")):
        problems.append(f"step {sid}: gateway seq/status {gw.get('seq')}/{gw.get('status')}, the usage log's row is {row.get('seq')}/{row.get('status')}")
    if row.get("status") in FORWARDED:
        m = step.get("metrics") or {}
        extra = m.get("extra") or {}
        got = (m.get("prompt_tokens"), m.get("completion_tokens"), m.get("cached_tokens"), extra.get("cache_write_tokens"),
               extra.get("input_tokens"), m.get("cost_usd"), step.get("model_name"))
        want = (int(row.get("prompt_tokens") or 0), int(row.get("output_tokens") or 0), int(row.get("cache_read_tokens") or 0),
                int(row.get("cache_write_tokens") or 0), int(row.get("input_tokens") or 0),
                None if row.get("cost_usd") is None else float(row["cost_usd"]), row.get("model"))
        if step.get("source") != "agent" or got != want:
            problems.append(f"step {sid}: metrics (prompt, completion, cached, cache write, input, cost, model) {got}, "
                            f"the usage log's row {row.get('seq')} has {want}")
    return problems


def trajectory_problems(folder: Path, *, doc: dict[str, Any] | None = None) -> list[str]:
    """Every way `folder/trajectory.json` disagrees with the folder's usage log, audit log and result."""
    if doc is None:
        try:
            doc = json.loads((folder / "trajectory.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return [f"cannot be read ({exc})"]
    problems = atif_problems(doc)
    if problems:
        return problems
    steps = doc["steps"]
    usage = sorted(read_objects(folder / "gateway.jsonl"), key=lambda r: int(r.get("seq") or 0))
    mine = _usage_steps(steps)
    if len(mine) != len(usage):
        problems.append(f"{len(mine)} step(s) from the gateway's usage log, the usage log has {len(usage)} row(s)")
    for (sid, step), row in zip(mine, usage, strict=False):
        problems += _step_vs_row(sid, step, row)
    audit = [r for r in read_objects(folder / "audit.jsonl") if r.get("channel") == "api"]
    erp = _erp_results(steps)
    if len(erp) != len(audit):
        problems.append(f"{len(erp)} ERP request(s) in the steps, the audit log has {len(audit)} of the agent's")
    for (sid, got), row in zip(erp, audit, strict=False):
        if got.get("audit_id") != row.get("id") or any(got.get(k) != row.get(k) for k in ERP_KEYS):
            problems.append(f"step {sid}: ERP request {[got.get('audit_id'), *(got.get(k) for k in ERP_KEYS)]}, "
                            f"the audit log's next is {[row.get('id'), *(row.get(k) for k in ERP_KEYS)]}")
            break  # one misplaced request shifts every later one: the first says where
    want_totals = final_metrics_of(usage, len(steps))
    if doc.get("final_metrics") != want_totals:
        problems.append(f"final_metrics {doc.get('final_metrics')} differ from the usage log's totals {want_totals}")
    try:
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return problems + ["result.json cannot be read"]
    want = json.loads(json.dumps(verdict_metadata(result), default=str))
    got = doc.get("extra") or {}
    for key in ("attempt", "verdict", "checks", "breaches", "transcript_mismatch"):
        if got.get(key) != want.get(key):
            problems.append(f"extra.{key} differs from result.json's")
    return problems
