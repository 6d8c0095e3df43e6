"""Usage read from provider answers (any chunking of a stream), the price table, the script format."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from model_gateway import fake_script as fs
from model_gateway.metering import UsageReader
from model_gateway.prices import load_prices

STEP = fs.parse_script({"steps": [{"content": [{"type": "text", "text": "x"},
                                               {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}],
                                   "usage": {"input_tokens": 7, "output_tokens": 5, "cache_read_tokens": 3,
                                             "cache_write_tokens": 2}}]}).steps[0]


@pytest.mark.parametrize("size", [1, 7, 64, 100000])
def test_anthropic_stream_usage_at_any_chunk_size(size: int) -> None:
    data = b"".join(fs.anthropic_events(STEP, "m", "id")).replace(b"\n", b"\r\n")  # CRLF framing too
    reader = UsageReader("anthropic", streaming=True)
    for i in range(0, len(data), size):
        reader.feed(data[i:i + size])
    u = reader.finish()
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.model) == (7, 5, 3, 2, "m")


@pytest.mark.parametrize("size", [3, 50, 100000])
def test_openai_stream_usage(size: int) -> None:
    for data in (b"".join(fs.responses_events(STEP, "g", "id")), b"".join(fs.chat_events(STEP, "g", "id", True))):
        reader = UsageReader("openai", streaming=True)
        for i in range(0, len(data), size):
            reader.feed(data[i:i + size])
        u = reader.finish()
        assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (10, 5, 3)


def test_chat_stream_without_include_usage_reports_nothing() -> None:
    reader = UsageReader("openai", streaming=True)
    reader.feed(b"".join(fs.chat_events(STEP, "g", "id", False)))
    assert reader.finish().input_tokens is None


def test_non_streamed_bodies() -> None:
    for provider, body in (("anthropic", fs.anthropic_message(STEP, "m", "i")), ("openai", fs.responses_body(STEP, "g", "i")),
                           ("openai", fs.chat_body(STEP, "g", "i"))):
        reader = UsageReader(provider, streaming=False)
        raw = json.dumps(body).encode()
        reader.feed(raw[:10])
        reader.feed(raw[10:])
        assert reader.finish().output_tokens == 5


def test_price_table_versioned_and_dated_names(tmp_path: Path) -> None:
    table = load_prices()
    assert table.version == "2026-12-01"
    assert table.price("claude-sonnet-4-5-20250929") == table.price("claude-sonnet-4-5")
    assert table.cost("no-such-model", fresh_input=1, output=1, cache_read=0, cache_write=0) is None
    assert table.cost("fake-claude", fresh_input=1_000_000, output=100_000, cache_read=0, cache_write=0) == 2.0
    bad = tmp_path / "p.yaml"
    bad.write_text("version: x\nmodels:\n  m: {input: 1}\n")
    with pytest.raises(ValueError, match="models.m needs"):
        load_prices(bad)


def test_script_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"steps\[0\].content\[0\]"):
        fs.parse_script({"steps": [{"content": [{"type": "image"}]}]})
    with pytest.raises(ValueError, match=r"steps\[0\].usage"):
        fs.parse_script({"steps": [{"usage": {"tokens": 1}}]})
