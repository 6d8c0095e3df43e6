"""Optional, off by default: the trajectory's steps as OpenTelemetry spans (GenAI semantic conventions).

For teams that already collect traces. `otlp_json(doc)` turns a trajectory into an OTLP/JSON
`ExportTraceServiceRequest` (the file format an OpenTelemetry Collector's `otlpjsonfile` receiver
reads); with `PB_TRAJECTORY_OTLP=1` in the orchestrator's environment each attempt also writes
`trajectory.otlp.json` beside its trajectory. Nothing is sent anywhere: the usage log and the
trajectory stay the record, this is a view of them.

Spans (one trace per attempt; ids derived from the attempt id, so the same trajectory gives the
same file): `invoke_agent <system>` for the attempt; under it one `chat <model>` span per model
call (`gen_ai.operation.name` chat, provider, request/response model, `gen_ai.usage.input_tokens`
(every prompt token), `output_tokens`, `cache_read.input_tokens`, `cache_creation.input_tokens`,
the gateway's cost as `pb.cost_usd`); under each, one `execute_tool <name>` span per tool call
(`gen_ai.tool.name`, `gen_ai.tool.call.id`) and one `erp <METHOD>` span per ERP request it made
(`http.request.method`, `url.path`, `http.response.status_code`, `pb.erp.outcome`, status ERROR
when the ERP refused it or failed). Day openings and prompts are `pb.step` spans of their own.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

ENV_SWITCH = "PB_TRAJECTORY_OTLP"
OTLP_FILE = "trajectory.otlp.json"
KIND_INTERNAL, KIND_CLIENT = 1, 3
STATUS_OK, STATUS_ERROR = 1, 2


def enabled() -> bool:
    """Whether the orchestrator was asked to write the OTLP file (off by default)."""
    return os.environ.get(ENV_SWITCH, "").strip().lower() in ("1", "true", "yes")


def _id(seed: str, n: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def _nanos(stamp: Any) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int((when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp() * 1e9)


def _attr(key: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # OTLP/JSON writes 64-bit integers as strings
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(trace: str, span_id: str, parent: str | None, name: str, kind: int, start: int, end: int,
          attrs: dict[str, Any], error: str | None = None) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": trace, "spanId": span_id, "name": name, "kind": kind,
                            "startTimeUnixNano": str(start), "endTimeUnixNano": str(max(end, start)),
                            "attributes": [a for k, v in attrs.items() if (a := _attr(k, v)) is not None],
                            "status": {"code": STATUS_ERROR, "message": error} if error else {"code": STATUS_OK}}
    if parent:
        span["parentSpanId"] = parent
    return span


def otlp_json(doc: dict[str, Any]) -> dict[str, Any]:
    """The trajectory as an OTLP/JSON trace export (see the module docstring)."""
    session = str(doc.get("session_id") or doc.get("trajectory_id") or "trajectory")
    trace = _id(f"trace:{session}", 32)
    root = _id(f"root:{session}", 16)
    agent = doc.get("agent") or {}
    steps = [s for s in doc.get("steps") or [] if isinstance(s, dict)]
    times = [t for t in (_nanos(s.get("timestamp")) for s in steps) if t is not None]
    t0, t_end = (min(times), max(times)) if times else (0, 0)
    spans: list[dict[str, Any]] = []
    previous = t0
    for i, step in enumerate(steps):
        sid = step.get("step_id")
        start = _nanos(step.get("timestamp")) or previous
        following = next((t for t in (_nanos(s.get("timestamp")) for s in steps[i + 1:]) if t is not None), None)
        extra = step.get("extra") or {}
        gw = extra.get("gateway") or {}
        latency = int(float(gw.get("latency_s") or 0) * 1e9)
        span_id = _id(f"step:{session}:{sid}", 16)
        m = step.get("metrics") or {}
        if step.get("source") == "agent" and m:
            model = step.get("model_name") or agent.get("model_name")
            end = start + latency
            spans.append(_span(trace, span_id, root, f"chat {model}", KIND_CLIENT, start, end, {
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": gw.get("provider"), "gen_ai.request.model": model,
                "gen_ai.response.model": model, "gen_ai.conversation.id": session,
                "gen_ai.usage.input_tokens": m.get("prompt_tokens"), "gen_ai.usage.output_tokens": m.get("completion_tokens"),
                "gen_ai.usage.cache_read.input_tokens": m.get("cached_tokens"),
                "gen_ai.usage.cache_creation.input_tokens": (m.get("extra") or {}).get("cache_write_tokens"),
                "pb.cost_usd": m.get("cost_usd"), "pb.step_id": sid, "pb.gateway.seq": gw.get("seq"), "pb.turn": extra.get("turn")}))
        else:
            end = start
            name = "execute erp requests" if step.get("source") == "agent" else f"pb.step {step.get('source')}"
            spans.append(_span(trace, span_id, root, name, KIND_INTERNAL, start, start, {
                "pb.step_id": sid, "pb.source": step.get("source"), "pb.turn": extra.get("turn"), "pb.date": extra.get("date")}))
        tool_end = following if following is not None and following >= end else end
        for call in step.get("tool_calls") or []:
            cid = str(call.get("tool_call_id"))
            spans.append(_span(trace, _id(f"tool:{session}:{sid}:{cid}", 16), span_id, f"execute_tool {call.get('function_name')}",
                               KIND_INTERNAL, end, tool_end, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.get("function_name"),
                                                              "gen_ai.tool.call.id": cid, "gen_ai.tool.type": "function"}))
        for k, res in enumerate((step.get("observation") or {}).get("results") or []):
            erp = (res.get("extra") or {}).get("erp") if isinstance(res, dict) else None
            if not isinstance(erp, dict):
                continue
            at = _nanos(erp.get("wall_time")) or end
            failed = erp.get("outcome") not in ("ok", None)
            spans.append(_span(trace, _id(f"erp:{session}:{sid}:{k}", 16), span_id, f"erp {erp.get('method')}", KIND_CLIENT, at, at, {
                "http.request.method": erp.get("method"), "url.path": erp.get("path"), "http.response.status_code": erp.get("status"),
                "pb.erp.outcome": erp.get("outcome"), "pb.erp.audit_id": erp.get("audit_id"), "pb.erp.error_code": erp.get("error_code"),
                "pb.erp.probe": erp.get("probe"), "pb.erp.breach": erp.get("breach"), "gen_ai.tool.call.id": res.get("source_call_id")},
                error=f"{erp.get('outcome')} {erp.get('error_code') or ''}".strip() if failed else None))
        previous = max(end, start)
    verdict = (doc.get("extra") or {}).get("verdict") or {}
    spans.insert(0, _span(trace, root, None, f"invoke_agent {agent.get('name')}", KIND_INTERNAL, t0, max(t_end, previous), {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent.get("name"), "gen_ai.conversation.id": session,
        "pb.outcome": verdict.get("outcome"), "pb.passed": verdict.get("passed"), "pb.breach": verdict.get("breach")}))
    resource = {"attributes": [a for a in (_attr("service.name", "process-bench"), _attr("pb.attempt_id", session)) if a]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "process-bench.trajectory", "version": "1"},
                                                                     "spans": spans}]}]}


def write_otlp(folder: Path, doc: dict[str, Any]) -> Path:
    """Write `folder/trajectory.otlp.json` from a trajectory; returns its path."""
    path = folder / OTLP_FILE
    path.write_text(json.dumps(otlp_json(doc), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path
