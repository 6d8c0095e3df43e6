"""Usage extractors read what a command system reported; absent figures stay absent."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_sandbox.usage import extract_usage


def test_none_and_unknown(tmp_path: Path) -> None:
    assert extract_usage(None, tmp_path) == {}
    with pytest.raises(KeyError, match="unknown usage extractor"):
        extract_usage("nope", tmp_path)


def test_usage_file(tmp_path: Path) -> None:
    assert extract_usage("usage-file", tmp_path) == {}
    (tmp_path / "agent-usage.json").write_text(json.dumps({"input_tokens": 10, "output_tokens": 2, "junk": "x", "cost_usd": "free"}))
    assert extract_usage("usage-file", tmp_path) == {"input_tokens": 10, "output_tokens": 2}


def test_codex_jsonl_sums_turns(tmp_path: Path) -> None:
    lines = [
        "not json",
        json.dumps({"type": "thread.started"}),
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 7}}),
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 0, "output_tokens": 3}}),
    ]
    (tmp_path / "stdout.txt").write_text("\n".join(lines) + "\n")
    assert extract_usage("codex-jsonl", tmp_path) == {"input_tokens": 150, "cached_input_tokens": 40, "output_tokens": 10}


def test_claude_json_result(tmp_path: Path) -> None:
    result = {
        "type": "result",
        "num_turns": 4,
        "total_cost_usd": 0.25,
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 85, "output_tokens": 9},
    }
    (tmp_path / "stdout.txt").write_text(json.dumps(result))
    assert extract_usage("claude-json", tmp_path) == {
        "input_tokens": 100, "cached_input_tokens": 85, "output_tokens": 9, "cost_usd": 0.25, "requests": 4,
    }
    (tmp_path / "stdout.txt").write_text("crashed before any output\n")
    assert extract_usage("claude-json", tmp_path) == {}
