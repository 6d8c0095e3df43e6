"""Codex trajectories from a recorded `codex exec --json` stream (data/codex-0.163-exec.jsonl:
the real Codex CLI 0.163 through the harness, the gateway and the fake provider, three model calls
and two shell commands; data/codex-0.163-gateway.jsonl: that gateway's usage log).

Codex reports no tokens per call, only per `turn.completed`; so its calls are cut from the item
stream (a tool's output followed by new model output starts the next call) and its totals are
what is compared with the usage log: equal totals pass, a changed figure or a call the transcript
does not account for is a mismatch."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.trajectory.atif import atif_problems
from orchestrator.trajectory.build import build_trajectory
from orchestrator.trajectory.mismatch import compare
from orchestrator.trajectory.transcripts import read_codex
from orchestrator.trajectory.verify import trajectory_problems

DATA = Path(__file__).parent / "data"


def _usage_log() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (DATA / "codex-0.163-gateway.jsonl").read_text().splitlines()]


@pytest.fixture()
def out(tmp_path: Path) -> Path:
    out = tmp_path / "turns" / "1" / "out"
    out.mkdir(parents=True)
    shutil.copy(DATA / "codex-0.163-exec.jsonl", out / "stdout.txt")
    (out.parent / "system.json").write_text(json.dumps({"kind": "command", "name": "codex", "usage": "codex-jsonl"}))
    (out.parent / "prompt.txt").write_text("Write the marker file.")
    return out


def test_the_item_stream_is_cut_into_the_model_calls(out: Path) -> None:
    turn = read_codex(out)
    assert [c.message for c in turn.calls] == ["Writing the marker.", "Checking.", "Done: marker written."]
    assert [[u.name for u in c.tool_uses] for c in turn.calls] == [["shell"], ["shell"], []]
    assert turn.calls[1].tool_uses[0].output == "from-codex\n"
    assert turn.total is not None and (turn.total.input + turn.total.cache_read, turn.total.cache_read, turn.total.output) == (3050, 200, 57)
    assert any("Model metadata" in n for n in turn.notes)  # Codex's own warning item is a note, not a call


def test_codex_totals_that_equal_the_usage_log_are_no_mismatch(out: Path) -> None:
    assert compare({1: read_codex(out)}, _usage_log()) is None


@pytest.mark.parametrize("change", ["drop a call", "more output", "cache hit", "a stray call"])
def test_codex_totals_that_differ_are_a_mismatch(out: Path, change: str) -> None:
    usage = _usage_log()
    if change == "drop a call":  # the gateway served one call fewer than Codex accounts for
        usage = usage[:-1]
    elif change == "more output":
        usage[0]["output_tokens"] += 1
    elif change == "cache hit":
        usage[1]["cache_read_tokens"] = 100
    else:  # something else talked to the model in this turn
        usage.append(dict(usage[0], seq=4))
    found = compare({1: read_codex(out)}, usage)
    assert found is not None and found.harness == "codex" and found.harness_calls is None
    assert found.differences[0].startswith("turn 1: gateway prompt")


def test_a_codex_trajectory_is_valid_and_carries_the_usage_logs_figures(out: Path) -> None:
    folder = out.parent.parent.parent
    with open(folder / "gateway.jsonl", "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in _usage_log())
    result = {"attempt_id": "a1", "system": "codex", "outcome": "graded", "turns": [{"n": 1, "date": "2026-10-08", "exit_code": 0}]}
    (folder / "result.json").write_text(json.dumps(result))
    doc = build_trajectory(folder, result)
    assert atif_problems(doc) == []
    assert trajectory_problems(folder, doc=doc) == []
    model = [s for s in doc["steps"] if (s.get("extra") or {}).get("gateway")]
    assert [s["message"] for s in model] == ["Writing the marker.", "Checking.", "Done: marker written."]
    assert [(s["metrics"]["prompt_tokens"], s["metrics"]["completion_tokens"], s["metrics"]["cached_tokens"]) for s in model] == [
        (r["prompt_tokens"], r["output_tokens"], r["cache_read_tokens"]) for r in _usage_log()]
    assert model[0]["tool_calls"][0]["arguments"]["command"].endswith("echo wrote'")
    assert model[0]["observation"]["results"][0]["content"] == "wrote\n"
    assert doc["final_metrics"]["total_prompt_tokens"] == 3050 and doc["final_metrics"]["total_cost_usd"] == pytest.approx(0.00344)
