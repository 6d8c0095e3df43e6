"""Claude Code transcripts (its session log), what the mismatch check makes of them, and a
transcript written by a hostile agent: the files of a turn's folder are the agent's, so whatever
they hold, the trajectory stays valid ATIF, its figures stay the gateway's, and a disagreement is
a mismatch — never an exception, never a changed verdict."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.trajectory.atif import atif_problems
from orchestrator.trajectory.build import build_trajectory
from orchestrator.trajectory.mismatch import compare
from orchestrator.trajectory.transcripts import read_claude
from orchestrator.trajectory.verify import trajectory_problems

USAGE = [(3200, 41, 0, 2900), (310, 38, 2900, 350), (920, 17, 3250, 0)]


def _session(calls: list[tuple[int, int, int, int]]) -> list[dict[str, Any]]:
    """Claude Code's session log of three calls: each assistant message written block by block
    (the message's usage repeated on each entry), each tool's result as a user entry."""
    out: list[dict[str, Any]] = [{"type": "user", "timestamp": "2026-12-03T10:00:00.000Z",
                                  "message": {"role": "user", "content": "prompt"}}]
    for i, (inp, outp, read, write) in enumerate(calls):
        usage = {"input_tokens": inp, "output_tokens": outp, "cache_read_input_tokens": read, "cache_creation_input_tokens": write}
        msg = {"id": f"msg_{i}", "model": "fake-claude", "role": "assistant", "usage": usage}
        out.append({"type": "assistant", "timestamp": f"2026-12-03T10:00:{10 * i + 1:02d}.000Z", "version": "2.0.9",
                    "message": msg | {"content": [{"type": "text", "text": f"answer {i}"}]}})
        if i < len(calls) - 1:
            out.append({"type": "assistant", "timestamp": f"2026-12-03T10:00:{10 * i + 2:02d}.000Z",
                        "message": msg | {"content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash",
                                                       "input": {"command": f"erp get /x/{i}"}}]}})
            out.append({"type": "user", "timestamp": f"2026-12-03T10:00:{10 * i + 5:02d}.000Z",
                        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                                 "content": [{"type": "text", "text": f"row {i}"}]}]}})
    return out


def _usage_log(calls: list[tuple[int, int, int, int]], turn: int = 1) -> list[dict[str, Any]]:
    return [{"seq": i + 1, "turn": turn, "status": "ok", "model": "fake-claude", "input_tokens": inp, "output_tokens": outp,
             "cache_read_tokens": read, "cache_write_tokens": write, "prompt_tokens": inp + read + write, "cost_usd": 0.001,
             "wall_time": 1764756000.0 + 10 * i + 2, "latency_s": 1.0} for i, (inp, outp, read, write) in enumerate(calls)]


def _write(folder: Path, session: list[dict[str, Any]] | str, usage: list[dict[str, Any]]) -> Path:
    out = folder / "turns" / "1" / "out"
    (out / "claude-session").mkdir(parents=True)
    text = session if isinstance(session, str) else "".join(json.dumps(e) + "\n" for e in session)
    (out / "claude-session" / "s.jsonl").write_text(text)
    (out / "stdout.txt").write_text(json.dumps({"type": "result", "result": "done", "usage": {}}))
    (out.parent / "system.json").write_text(json.dumps({"kind": "command", "name": "claude-code", "usage": "claude-json"}))
    (folder / "gateway.jsonl").write_text("".join(json.dumps(r) + "\n" for r in usage))
    return out


def test_one_call_per_message_with_its_tools_and_their_output(tmp_path: Path) -> None:
    out = _write(tmp_path, _session(USAGE), _usage_log(USAGE))
    turn = read_claude(out)
    assert [c.message for c in turn.calls] == ["answer 0", "answer 1", "answer 2"]
    assert [(u.name, u.output) for c in turn.calls for u in c.tool_uses] == [("Bash", "row 0"), ("Bash", "row 1")]
    assert [(c.usage.input, c.usage.output, c.usage.cache_read, c.usage.cache_write) for c in turn.calls if c.usage] == USAGE
    assert compare({1: turn}, _usage_log(USAGE)) is None


@pytest.mark.parametrize(("name", "usage", "expect"), [
    ("a call the transcript omits", _usage_log([*USAGE[:1], (500, 5, 0, 0), *USAGE[1:]]),
     "turn 1: the gateway metered 4 model call(s), the harness's transcript reports 3"),
    ("a call the gateway never served", _usage_log(USAGE[:2]), "turn 1: the gateway metered 2 model call(s), the harness's transcript reports 3"),
    ("other output tokens", _usage_log([USAGE[0], (310, 39, 2900, 350), USAGE[2]]), "turn 1 call 2 (gateway seq 2): gateway input 310, output 39"),
    ("calls in another order", _usage_log([USAGE[1], USAGE[0], USAGE[2]]), "turn 1 call 1 ("),
    ("a call in another turn", _usage_log(USAGE, turn=2), "turn 1: the gateway metered 0 model call(s)"),
])
def test_what_the_gateway_metered_differently_is_a_mismatch(tmp_path: Path, name: str, usage: list[dict[str, Any]], expect: str) -> None:
    out = _write(tmp_path, _session(USAGE), usage)
    found = compare({1: read_claude(out)}, usage)
    assert found is not None, name
    assert any(d.startswith(expect) for d in found.differences), found.differences
    assert found.harness == "claude-code" and found.harness_calls == 3


def _hostile() -> str:
    """A session log an agent forged: garbage lines, ids repeated, odd types, a fake timestamp."""
    bad = [
        "not json at all",
        json.dumps(["a", "list"]),
        json.dumps({"type": "assistant", "timestamp": "yesterday", "message": {"id": "m1", "model": {"x": 1}, "usage": {"input_tokens": -5},
                                                                             "content": [{"type": "tool_use", "id": "t", "name": None, "input": "rm -rf /"},
                                                                                         {"type": "tool_use", "id": "t", "name": "Bash", "input": {}},
                                                                                         {"type": "text", "text": 12}]}}),
        json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": {"odd": True}}]}}),
        json.dumps({"type": "assistant", "message": {"id": "m2", "content": "not a list", "usage": "lots"}}),
        json.dumps({"type": "assistant", "message": {"id": "m3", "model": "<synthetic>", "content": []}}),
    ]
    return "\n".join(bad) + "\n"


def test_a_forged_transcript_keeps_the_trajectory_valid_and_the_figures_the_gateways(tmp_path: Path) -> None:
    usage = _usage_log(USAGE[:2])
    _write(tmp_path, _hostile(), usage)
    result = {"attempt_id": "a", "system": "claude-code", "outcome": "graded", "passed": True,
              "turns": [{"n": 1, "date": "2026-10-08", "exit_code": 0}]}
    (tmp_path / "result.json").write_text(json.dumps(result))
    doc = build_trajectory(tmp_path, result)
    assert atif_problems(doc) == []
    assert trajectory_problems(tmp_path, doc=doc) == []
    steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [s["metrics"]["prompt_tokens"] for s in steps] == [r["prompt_tokens"] for r in usage]
    ids = [c["tool_call_id"] for s in steps for c in s.get("tool_calls") or []]
    assert len(ids) == len(set(ids)) == 2  # the repeated id made unique
    assert doc["extra"]["verdict"]["passed"] is True  # the transcript moves no verdict
    found = compare({1: read_claude(tmp_path / "turns" / "1" / "out")}, usage)
    assert found is not None  # m1 claims other tokens, m2 none


# A real session log of Claude Code 2.1 in the agent-claude container (payment-run turn 1 against
# the fake provider; only its user and assistant entries kept), and that attempt's usage-log rows.
DATA = Path(__file__).parent / "data"


def _real(tmp_path: Path, drop_message: int | None = None) -> Path:
    entries = [json.loads(x) for x in (DATA / "claude-code-session.jsonl").read_text().splitlines()]
    ids = list(dict.fromkeys(e["message"]["id"] for e in entries if e["type"] == "assistant"))
    if drop_message is not None:
        entries = [e for e in entries if e["type"] != "assistant" or e["message"]["id"] != ids[drop_message]]
    usage = [json.loads(x) for x in (DATA / "claude-code-gateway.jsonl").read_text().splitlines()]
    return _write(tmp_path, entries, usage)


def test_a_real_claude_code_session_agrees_with_its_usage_log(tmp_path: Path) -> None:
    turn = read_claude(_real(tmp_path))
    usage = [json.loads(x) for x in (DATA / "claude-code-gateway.jsonl").read_text().splitlines()]
    assert len(turn.calls) == len(usage) == 3
    assert [u.arguments.get("command") for c in turn.calls for u in c.tool_uses] == ["erp whoami", "erp get /ap-invoices limit=5"]
    assert all(u.output for c in turn.calls for u in c.tool_uses)
    assert compare({1: turn}, usage) is None


@pytest.mark.parametrize("dropped", [0, 1, 2])
def test_a_real_session_that_omits_a_served_call_is_a_mismatch(tmp_path: Path, dropped: int) -> None:
    usage = [json.loads(x) for x in (DATA / "claude-code-gateway.jsonl").read_text().splitlines()]
    found = compare({1: read_claude(_real(tmp_path, dropped))}, usage)
    assert found is not None and found.gateway_calls == 3 and found.harness_calls == 2
    assert found.differences[0] == "turn 1: the gateway metered 3 model call(s), the harness's transcript reports 2"
