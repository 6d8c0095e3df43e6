"""One attempt's trajectory in ATIF v1.7 (`trajectory.json`), built on the host from its records.

Sources: each turn's folder (prompt, system, the harness's transcript: transcripts.py), the
gateway's usage log (`gateway.jsonl`: the authoritative tokens, cache hits, latency and cost of each
model call), the ERP's audit log (`audit.jsonl`: every request, its outcome and refusal code;
counterparties' actions), the injected faults (`faults.jsonl`) and the result (verdict, checks,
breaches).

Steps, turn after turn:

- a `system` step opening the business day: the clock advance, what the counterparties did
  (the audit's `sim` rows of the days advanced over) and the faults injected that day;
- a `user` step: the turn's prompt;
- for a model-calling system, one `agent` step per usage-log row of the turn, in usage-log order: a
  forwarded call carries the gateway's metrics and the harness's content for that call (its
  text, thinking, tool calls and their output); a call the gateway refused is a `system` step.
  Calls the harness reports beyond the usage log's are `agent` steps marked `harness_only`;
- for any other system (scripted policies), one `agent` step per ERP request with
  `llm_call_count: 0` (a deterministic dispatch, ATIF v1.7);
- every ERP request of the agent (audit `api` rows) is an observation result with
  `extra.erp` (audit id, method, path, outcome, status, error code; `probe` when refused,
  `breach` when a breach cites it), under the tool call of the model step that was last to
  start before it.

A closing `system` step covers the advance to the grading date. The verdict, checks, breaches
and any transcript mismatch are the root's `extra`.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from orchestrator.jsonl import read_objects
from orchestrator.trajectory.atif import SCHEMA_VERSION
from orchestrator.trajectory.mismatch import FORWARDED, align
from orchestrator.trajectory.transcripts import HarnessCall, HarnessTurn, clip, read_turn

WINDOW_SLACK_S = 0.05  # the ERP's wall_time is in milliseconds, the runner's turn window in microseconds (one clock)
ERP_FIELDS = ("id", "business_date", "wall_time", "method", "path", "action", "object_type", "object_id", "outcome",
              "status", "error_code", "replay")


def _json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _epoch(value: Any) -> float | None:
    """Seconds since the epoch of an ISO 8601 text or a number (None when neither)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)).timestamp()
    return None


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def harness_of(turn_dir: Path) -> str:
    """Which transcript reader a turn's output takes: from its system.json, else from what is there."""
    system = _json(turn_dir / "system.json")
    if system.get("kind") == "policy":
        return "policy"
    usage = system.get("usage")
    if usage == "claude-json" or (turn_dir / "out" / "claude-session").is_dir():
        return "claude-code"
    if usage == "codex-jsonl":
        return "codex"
    return "command"


def read_transcripts(folder: Path, turns: list[dict[str, Any]]) -> dict[int, HarnessTurn]:
    """Every turn's transcript, by turn number."""
    out = {}
    for t in turns:
        n = int(t.get("n") or 0)
        turn_dir = folder / "turns" / str(n)
        out[n] = read_turn(turn_dir / "out", harness_of(turn_dir))
    return out


def _erp_result(row: dict[str, Any], call_id: str | None, breach_ids: set[int]) -> dict[str, Any]:
    erp = {k: row.get(k) for k in ERP_FIELDS if row.get(k) is not None}
    erp["audit_id"] = erp.pop("id", None)
    erp["probe"] = row.get("outcome") == "refused"
    erp["breach"] = row.get("id") in breach_ids
    code = f" {row.get('error_code')}" if row.get("error_code") else ""
    content = f"{row.get('method')} {row.get('path')} -> {row.get('outcome')} ({row.get('status')}{code})"
    return {"source_call_id": call_id, "content": content, "extra": {"erp": erp}}


def breach_audit_ids(result: dict[str, Any]) -> set[int]:
    """The audit ids the result's breaches cite (`refs.audit_id`, `refs.audit_ids`)."""
    ids: set[int] = set()
    for b in result.get("breaches") or []:
        refs = b.get("refs") if isinstance(b, dict) else None
        if isinstance(refs, dict):
            ids.update(i for i in refs.get("audit_ids") or [] if isinstance(i, int))
            if isinstance(refs.get("audit_id"), int):
                ids.add(refs["audit_id"])
    return ids


def _split_by_turn(rows: list[dict[str, Any]], turns: list[dict[str, Any]],
                   windows: dict[int, tuple[float, float]] | None) -> dict[int, list[dict[str, Any]]]:
    """The agent's requests of each turn: by the turn's wall-clock window when known, else by its date."""
    out: dict[int, list[dict[str, Any]]] = {int(t.get("n") or 0): [] for t in turns}
    first_of_date: dict[str, int] = {}
    for t in turns:
        first_of_date.setdefault(str(t.get("date")), int(t.get("n") or 0))
    for row in rows:
        when = _epoch(row.get("wall_time"))
        n = None
        if windows and when is not None:
            n = next((k for k, (a, b) in sorted(windows.items()) if a - WINDOW_SLACK_S <= when <= b + WINDOW_SLACK_S), None)
        if n is None:
            n = first_of_date.get(str(row.get("business_date")))
        if n is None:  # no turn of its date: the last turn before it (or the first turn)
            before = [int(t.get("n") or 0) for t in turns if str(t.get("date")) <= str(row.get("business_date"))]
            n = max(before) if before else (min(out) if out else None)
        if n is not None:
            out.setdefault(n, []).append(row)
    return out


class _Steps:
    """The growing list of steps, numbered as they are added."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.call_ids: set[str] = set()

    def unique_id(self, call_id: str) -> str:
        """`call_id`, or `call_id#k` when an earlier tool call of the trajectory has it."""
        out, k = call_id, 1
        while out in self.call_ids:
            k += 1
            out = f"{call_id}#{k}"
        self.call_ids.add(out)
        return out

    def add(self, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "source": source, "message": message}
        step.update({k: v for k, v in fields.items() if v not in (None, [], {})})
        self.steps.append(step)
        return step


def _day_step(steps: _Steps, n: int | None, date: str, sims: list[dict[str, Any]], faults: list[dict[str, Any]],
              extra: dict[str, Any], since: str | None = None) -> None:
    what = "the grading date" if n is None else f"turn {n}"
    results = [{"content": f"{r.get('business_date')} {r.get('actor') or 'counterparty'}: {r.get('action')} "
                           f"{r.get('object_type') or ''} {r.get('object_id') or ''}".rstrip(),
                "extra": {"counterparty": {k: r.get(k) for k in ("id", "business_date", "actor", "action", "object_type", "object_id")}}}
               for r in sims]
    results += [{"content": f"fault {f.get('kind')} ({f.get('rule')}) on {f.get('method')} {f.get('path')}",
                 "extra": {"fault": {k: f.get(k) for k in ("seq", "kind", "rule", "method", "path", "business_date", "committed",
                                                           "client_status", "audit_before", "audit_after")}}}
                for f in faults]
    advance = f"from {since} to {date}" if since and since != date else f"to {date}"
    message = (f"Business day {date} ({what}): the clock advanced {advance}; the counterparties acted "
               f"{len(sims)} time(s); {len(faults)} fault(s) injected.")
    stamp = _iso(_epoch(sims[0].get("wall_time"))) if sims else None
    steps.add("system", message, timestamp=stamp, observation={"results": results} if results else None, extra=extra)


def _metrics(row: dict[str, Any]) -> dict[str, Any]:
    m: dict[str, Any] = {"prompt_tokens": int(row.get("prompt_tokens") or 0), "completion_tokens": int(row.get("output_tokens") or 0),
                         "cached_tokens": int(row.get("cache_read_tokens") or 0)}
    if row.get("cost_usd") is not None:
        m["cost_usd"] = float(row["cost_usd"])
    m["extra"] = {"input_tokens": int(row.get("input_tokens") or 0), "cache_write_tokens": int(row.get("cache_write_tokens") or 0),
                  "source": "gateway"}
    return m


def _gateway_extra(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in ("seq", "turn", "status", "http_status", "endpoint", "provider", "model", "latency_s",
                                    "ttfb_s", "price_version", "detail", "cause")}


def _agent_step(steps: _Steps, call: HarnessCall | None, row: dict[str, Any] | None, n: int, *, transcript: bool = False) -> dict[str, Any]:
    missing = transcript and call is None and row is not None  # metered, but absent from a transcript that lists calls
    call = call or HarnessCall()
    for use in call.tool_uses:  # ids the harness repeats (or an agent forged) stay unique in the trajectory
        use.call_id = steps.unique_id(str(use.call_id))
    tool_calls = [{"tool_call_id": u.call_id, "function_name": str(u.name), "arguments": u.arguments} for u in call.tool_uses]
    results = [{"source_call_id": u.call_id, "content": u.output if u.output is not None else "",
                "extra": {"is_error": u.is_error}} for u in call.tool_uses]
    extra: dict[str, Any] = {"turn": n}
    if row is not None:
        extra["gateway"] = _gateway_extra(row)
    else:
        extra["harness_only"] = True  # reported by the harness, never metered by the gateway
    if missing:
        extra["not_in_transcript"] = True
    if call.usage is not None:
        extra["harness_usage"] = call.usage.as_dict()
    start = (_epoch(row.get("wall_time")) or 0.0) - float(row.get("latency_s") or 0.0) if row is not None else None
    model = (row or {}).get("model") or call.model
    return steps.add("agent", clip(call.message), timestamp=_iso(start if row is not None else _epoch(call.timestamp)),
                     model_name=None if model is None else str(model), reasoning_content=call.reasoning and clip(call.reasoning),
                     tool_calls=tool_calls, observation={"results": results}, metrics=_metrics(row) if row is not None else None,
                     llm_call_count=1, extra=extra)


def _attach(step: dict[str, Any], req: dict[str, Any], breach_ids: set[int]) -> None:
    """An ERP request under the tool call of `step` that made it (the first whose output came after it)."""
    calls = step.get("tool_calls") or []
    when = _epoch(req.get("wall_time"))
    call_id = None
    if calls:
        done = {r.get("source_call_id"): r for r in (step.get("observation") or {}).get("results") or []}
        call_id = calls[-1]["tool_call_id"]
        for c in calls:
            stamp = _epoch(((done.get(c["tool_call_id"]) or {}).get("extra") or {}).get("done_at"))
            if stamp is not None and when is not None and when <= stamp:
                call_id = c["tool_call_id"]
                break
    step.setdefault("observation", {"results": []})["results"].append(_erp_result(req, call_id, breach_ids))


def _model_turn(steps: _Steps, n: int, harness: HarnessTurn, rows: list[dict[str, Any]], requests: list[dict[str, Any]],
                breach_ids: set[int]) -> None:
    # The usage log's rows in order, each forwarded one paired with its call in the harness's
    # transcript; a call the gateway never served goes where the alignment puts it.
    pairs = iter(align([r for r in rows if r.get("status") in FORWARDED], list(harness.calls), by_usage=harness.per_call_usage))
    model_steps: list[dict[str, Any]] = []
    pending = list(requests)

    def flush_before(limit: float | None) -> None:
        # Requests made before this step started belong to the step before it.
        while pending and (limit is None or (_epoch(pending[0].get("wall_time")) or 0.0) < limit):
            req = pending.pop(0)
            if model_steps:
                _attach(model_steps[-1], req, breach_ids)
            else:
                _dispatch(steps, [req], n, breach_ids, "before the first model call")

    def model_step(call: HarnessCall | None, row: dict[str, Any] | None) -> None:
        step = _agent_step(steps, call, row, n, transcript=harness.harness in ("claude-code", "codex"))
        for use, res in zip(call.tool_uses if call else [], step["observation"]["results"], strict=False):
            if use.done_at:
                res["extra"]["done_at"] = use.done_at
        model_steps.append(step)

    for row in rows:
        if row.get("status") not in FORWARDED:
            steps.add("system", f"The model gateway refused a request ({row.get('status')}): {row.get('detail') or ''}".strip(),
                      extra={"turn": n, "gateway": _gateway_extra(row)})
            continue
        flush_before((_epoch(row.get("wall_time")) or 0.0) - float(row.get("latency_s") or 0.0))
        for paired_row, call in pairs:
            model_step(call, paired_row)  # a harness-only call (paired_row None) until this row's pair
            if paired_row is row:
                break
    for paired_row, call in pairs:
        model_step(call, paired_row)
    flush_before(None)
    for step in model_steps:
        for res in step["observation"]["results"]:
            (res.get("extra") or {}).pop("done_at", None)
        if not step["observation"]["results"]:
            del step["observation"]


def _dispatch(steps: _Steps, requests: list[dict[str, Any]], n: int, breach_ids: set[int], why: str | None = None) -> None:
    """ERP requests made without a model call: one deterministic step each (ATIF llm_call_count 0)."""
    for req in requests:
        call_id = steps.unique_id(f"erp-{req.get('id')}")
        args = {"method": req.get("method"), "path": req.get("path")}
        body = req.get("request")
        if isinstance(body, str):  # the audit keeps the body as JSON text (possibly truncated: then as text)
            try:
                body = json.loads(body)
            except ValueError:
                pass
        if body not in (None, {}, ""):
            args["request"] = body
        steps.add("agent", f"{req.get('method')} {req.get('path')}", timestamp=_iso(_epoch(req.get("wall_time"))),
                  tool_calls=[{"tool_call_id": call_id, "function_name": "erp_request", "arguments": args}],
                  observation={"results": [_erp_result(req, call_id, breach_ids)]}, llm_call_count=0,
                  extra={"turn": n, **({"note": why} if why else {})})


def _days(audit: list[dict[str, Any]], faults: list[dict[str, Any]], after: str | None, upto: str) -> tuple[list, list]:
    sims = [r for r in audit if r.get("channel") == "sim" and (after is None or str(r.get("business_date")) > after)
            and str(r.get("business_date")) <= upto]
    days = [f for f in faults if (after is None or str(f.get("business_date")) > after) and str(f.get("business_date")) <= upto]
    return sims, days


def _agent_info(result: dict[str, Any], transcripts: dict[int, HarnessTurn], usage: list[dict[str, Any]],
                folder: Path) -> dict[str, Any]:
    models = [r.get("model") for r in usage if r.get("model")]
    version = None
    for path in sorted((folder / "turns").glob("*/out/claude-session/*.jsonl")):
        version = next((str(e["version"]) for e in read_objects(path) if e.get("version")), None)
        if version:
            break
    harnesses = sorted({t.harness for t in transcripts.values()})
    agent: dict[str, Any] = {"name": str(result.get("system") or "unknown"), "version": version or "unknown",
                             "extra": {"harness": ",".join(harnesses) or "none", "interface": result.get("interface") or "cli"}}
    if models:
        agent["model_name"] = str(models[0])
    return agent


def final_metrics_of(usage: list[dict[str, Any]], n_steps: int) -> dict[str, Any]:
    """The trajectory's totals: the usage log's forwarded calls, summed."""
    rows = [r for r in usage if r.get("status") in FORWARDED]
    costs = [float(r["cost_usd"]) for r in rows if r.get("cost_usd") is not None]
    out: dict[str, Any] = {
        "total_prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in rows),
        "total_completion_tokens": sum(int(r.get("output_tokens") or 0) for r in rows),
        "total_cached_tokens": sum(int(r.get("cache_read_tokens") or 0) for r in rows),
        "total_steps": n_steps,
        "extra": {"model_calls": len(rows), "source": "gateway",
                  "cache_write_tokens": sum(int(r.get("cache_write_tokens") or 0) for r in rows)},
    }
    if costs:
        out["total_cost_usd"] = round(sum(costs), 8)
    return out


def verdict_metadata(result: dict[str, Any]) -> dict[str, Any]:
    """The root's `extra`: the attempt's identity, verdict, checks, breaches and any transcript mismatch."""
    checks = [{k: c.get(k) for k in ("name", "type", "required", "passed", "breach", "detail")}
              for c in result.get("checks") or [] if isinstance(c, dict)]
    return {
        "attempt": {k: result.get(k) for k in ("attempt_id", "cell", "system", "task", "task_version", "seed", "rep", "label",
                                               "condition", "interface", "isolation")},
        "verdict": {k: result.get(k) for k in ("outcome", "graded", "passed", "breach", "probes", "writes")},
        "checks": checks,
        "breaches": result.get("breaches") or [],
        "error": result.get("error"),
        "transcript_mismatch": result.get("transcript_mismatch"),
    }


def build_trajectory(folder: Path, result: dict[str, Any], *, grading_date: str | None = None,
                     windows: dict[int, tuple[float, float]] | None = None,
                     transcripts: dict[int, HarnessTurn] | None = None) -> dict[str, Any]:
    """The attempt's ATIF v1.7 trajectory from its folder and its result (see the module docstring).

    `windows` are the turns' wall-clock spans (epoch seconds), which place each ERP request in its
    turn; without them a request goes to the first turn of its business date.
    """
    turns = [t for t in result.get("turns") or [] if isinstance(t, dict)]
    audit = read_objects(folder / "audit.jsonl")
    faults = read_objects(folder / "faults.jsonl")
    usage = sorted(read_objects(folder / "gateway.jsonl"), key=lambda r: int(r.get("seq") or 0))
    transcripts = transcripts if transcripts is not None else read_transcripts(folder, turns)
    requests = _split_by_turn([r for r in audit if r.get("channel") == "api"], turns, windows)
    breach_ids = breach_audit_ids(result)
    model_system = bool(usage) or any(t.harness in ("claude-code", "codex") for t in transcripts.values())
    steps = _Steps()
    previous: str | None = None
    for t in turns:
        n, date = int(t.get("n") or 0), str(t.get("date"))
        sims, days_faults = _days(audit, faults, previous, date)
        _day_step(steps, n, date, sims, days_faults, {"turn": n, "date": date, "advance_s": t.get("advance_s")}, since=previous)
        previous = date if previous is None or date > previous else previous
        turn_dir = folder / "turns" / str(n)
        try:
            prompt = (turn_dir / "prompt.txt").read_text(encoding="utf-8", errors="replace")
        except OSError:
            prompt = ""
        steps.add("user", clip(prompt), extra={"turn": n, "date": date, "budget_s": t.get("budget_s")})
        harness = transcripts.get(n) or HarnessTurn("none")
        rows = [r for r in usage if r.get("turn") == n]
        mine = requests.get(n, [])
        if model_system:
            _model_turn(steps, n, harness, rows, mine, breach_ids)
        else:
            _dispatch(steps, mine, n, breach_ids)
        closing = {"turn": n, "exit_code": t.get("exit_code"), "timed_out": t.get("timed_out"), "duration_s": t.get("duration_s"),
                   "usage": t.get("usage"), "harness": harness.harness, "notes": list(t.get("notes") or []) + harness.notes}
        answer = harness.answer if harness.harness in ("command", "policy") else None
        steps.add("system", f"Turn {n} ended: exit status {t.get('exit_code')}" + (", timed out" if t.get("timed_out") else "") + ".",
                  observation={"results": [{"content": answer}]} if answer else None, extra=closing)
    stray = [r for n, rs in requests.items() if n not in {int(t.get("n") or 0) for t in turns} for r in rs]
    if stray:
        _dispatch(steps, stray, 0, breach_ids, "outside every turn")
    if grading_date and previous is not None:
        sims, days_faults = _days(audit, faults, previous, grading_date)
        _day_step(steps, None, grading_date, sims, days_faults, {"date": grading_date, "grading": True}, since=previous)
    if not steps.steps:
        steps.add("system", "No turn ran.")
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": str(result.get("attempt_id") or folder.name),
        "trajectory_id": str(result.get("attempt_id") or folder.name),
        "agent": _agent_info(result, transcripts, usage, folder),
        "steps": steps.steps,
        "notes": ("Built on the host by process-bench from the attempt's records: model-call figures are the model "
                  "gateway's usage log, ERP requests the ERP's audit log; messages and tool output are the harness's own transcript."),
        "final_metrics": final_metrics_of(usage, len(steps.steps)),
        "extra": verdict_metadata(result),
    }
    return doc
