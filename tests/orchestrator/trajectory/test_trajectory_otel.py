"""The optional OpenTelemetry view of a trajectory (orchestrator/trajectory/otel.py): an OTLP/JSON
trace whose spans follow the GenAI semantic conventions, one `chat` span per model call with the
gateway's tokens, `execute_tool` and `erp` spans under it (a refused request an ERROR); written only
when PB_TRAJECTORY_OTLP asks for it."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.trajectory import otel
from orchestrator.trajectory.record import record_trajectory


def _trajectory() -> dict[str, Any]:
    erp = {"audit_id": 7, "method": "POST", "path": "/payments", "outcome": "refused", "status": 403, "error_code": "forbidden",
           "probe": True, "breach": False, "wall_time": "2026-12-03T10:00:03.500+00:00"}
    return {"schema_version": "ATIF-v1.7", "session_id": "att-1", "agent": {"name": "claude-code", "version": "2", "model_name": "m"},
            "extra": {"verdict": {"outcome": "graded", "passed": False, "breach": False}},
            "steps": [
                {"step_id": 1, "source": "system", "message": "day", "timestamp": "2026-12-03T10:00:00Z", "extra": {"turn": 1}},
                {"step_id": 2, "source": "user", "message": "prompt", "extra": {"turn": 1}},
                {"step_id": 3, "source": "agent", "message": "paying", "timestamp": "2026-12-03T10:00:01Z", "model_name": "m",
                 "tool_calls": [{"tool_call_id": "t1", "function_name": "Bash", "arguments": {"command": "erp post /payments"}}],
                 "observation": {"results": [{"source_call_id": "t1", "content": "403"},
                                             {"source_call_id": "t1", "content": "POST /payments", "extra": {"erp": erp}}]},
                 "metrics": {"prompt_tokens": 1200, "completion_tokens": 40, "cached_tokens": 1000, "cost_usd": 0.002,
                             "extra": {"cache_write_tokens": 30}},
                 "extra": {"turn": 1, "gateway": {"seq": 1, "provider": "anthropic", "latency_s": 1.5}}},
                {"step_id": 4, "source": "agent", "message": "done", "timestamp": "2026-12-03T10:00:05Z", "model_name": "m",
                 "metrics": {"prompt_tokens": 1300, "completion_tokens": 5, "cached_tokens": 1200},
                 "extra": {"turn": 1, "gateway": {"seq": 2, "provider": "anthropic", "latency_s": 0.5}}},
            ]}


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_the_spans_follow_the_genai_conventions() -> None:
    out = otel.otlp_json(_trajectory())
    spans = out["resourceSpans"][0]["scopeSpans"][0]["spans"]
    ids = {s["spanId"] for s in spans}
    assert len(ids) == len(spans) and all(re.fullmatch(r"[0-9a-f]{16}", i) for i in ids)
    assert len({s["traceId"] for s in spans}) == 1 and re.fullmatch(r"[0-9a-f]{32}", spans[0]["traceId"])
    assert all(s.get("parentSpanId") in ids for s in spans[1:]) and "parentSpanId" not in spans[0]
    assert all(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) for s in spans)
    root = _attrs(spans[0])
    assert spans[0]["name"] == "invoke_agent claude-code" and root["gen_ai.operation.name"] == "invoke_agent"
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert [_attrs(s)["gen_ai.usage.input_tokens"] for s in chats] == ["1200", "1300"]
    first = _attrs(chats[0])
    assert (first["gen_ai.operation.name"], first["gen_ai.provider.name"], first["gen_ai.usage.output_tokens"],
            first["gen_ai.usage.cache_read.input_tokens"], first["gen_ai.usage.cache_creation.input_tokens"]) == (
        "chat", "anthropic", "40", "1000", "30")
    assert int(chats[0]["endTimeUnixNano"]) - int(chats[0]["startTimeUnixNano"]) == 1_500_000_000
    tool = next(s for s in spans if s["name"] == "execute_tool Bash")
    assert tool["parentSpanId"] == chats[0]["spanId"] and _attrs(tool)["gen_ai.tool.call.id"] == "t1"
    erp = next(s for s in spans if s["name"] == "erp POST")
    assert erp["parentSpanId"] == chats[0]["spanId"] and erp["status"]["code"] == otel.STATUS_ERROR
    assert _attrs(erp)["http.response.status_code"] == "403" and _attrs(erp)["url.path"] == "/payments"
    assert otel.otlp_json(_trajectory()) == out  # ids from the attempt id: the same trajectory, the same file


def test_off_by_default_and_written_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = {"attempt_id": "a", "system": "oracle", "outcome": "graded", "turns": [{"n": 1, "date": "2026-10-08", "exit_code": 0}]}
    monkeypatch.delenv(otel.ENV_SWITCH, raising=False)
    record_trajectory(tmp_path, result)
    assert (tmp_path / "trajectory.json").is_file() and not (tmp_path / otel.OTLP_FILE).exists()
    monkeypatch.setenv(otel.ENV_SWITCH, "1")
    record_trajectory(tmp_path, result)
    doc = json.loads((tmp_path / otel.OTLP_FILE).read_text())
    assert doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] == "invoke_agent oracle"
