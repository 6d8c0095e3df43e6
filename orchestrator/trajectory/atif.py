"""ATIF v1.7 (Harbor's Agent Trajectory Interchange Format, RFC 0001): the schema and its checks.

The JSON Schema (`atif-v1.7.schema.json` beside this module) was written here from the RFC's
field tables; `atif_problems` applies it and the rules a JSON Schema cannot state: step ids run
1, 2, ... in order; an observation result's `source_call_id` names a tool call of its own step;
timestamps are ISO 8601; embedded subagents carry unique `trajectory_id`s.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "ATIF-v1.7"
SCHEMA_FILE = Path(__file__).with_name("atif-v1.7.schema.json")


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _where(path: Any) -> str:
    return "/".join(str(p) for p in path) or "(root)"


def _timestamp_ok(value: Any) -> bool:
    if value is None:
        return True
    try:
        dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _step_rules(doc: dict[str, Any], prefix: str) -> list[str]:
    problems: list[str] = []
    steps = doc.get("steps")
    for i, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, dict):
            continue
        if step.get("step_id") != i + 1:
            problems.append(f"{prefix}steps/{i}: step_id {step.get('step_id')!r}, expected {i + 1} (1, 2, ... in order)")
        if not _timestamp_ok(step.get("timestamp")):
            problems.append(f"{prefix}steps/{i}: timestamp {step.get('timestamp')!r} is not ISO 8601")
        calls = {c.get("tool_call_id") for c in step.get("tool_calls") or [] if isinstance(c, dict)}
        if len(calls) != len(step.get("tool_calls") or []):
            problems.append(f"{prefix}steps/{i}: tool_call_ids repeat")
        for j, res in enumerate((step.get("observation") or {}).get("results") or []):
            ref = res.get("source_call_id") if isinstance(res, dict) else None
            if ref is not None and ref not in calls:
                problems.append(f"{prefix}steps/{i}/observation/results/{j}: source_call_id {ref!r} names no tool call of this step")
    subs = doc.get("subagent_trajectories") or []
    ids = [s.get("trajectory_id") for s in subs if isinstance(s, dict)]
    if len(set(ids)) != len(ids):
        problems.append(f"{prefix}subagent_trajectories: trajectory_ids repeat")
    for k, sub in enumerate(subs):
        if isinstance(sub, dict):
            problems += _step_rules(sub, f"{prefix}subagent_trajectories/{k}/")
    return problems


def atif_problems(doc: Any) -> list[str]:
    """Every way `doc` is not a valid ATIF v1.7 trajectory (empty: valid)."""
    problems = [f"{_where(e.absolute_path)}: {e.message}" for e in sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))]
    if isinstance(doc, dict):
        problems += _step_rules(doc, "")
    return problems
