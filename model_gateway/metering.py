"""Metering: usage figures read from provider responses (streamed or not) and the usage log.

The figures are the ones the provider reported in its response, read while the bytes pass
through (an incremental SSE parser), never estimated. One usage-log row per call.

Token fields of a row, as reported:

- Anthropic: `input_tokens` (fresh input, cache excluded), `cache_read_tokens`
  (`cache_read_input_tokens`), `cache_write_tokens` (`cache_creation_input_tokens`),
  `output_tokens`.
- OpenAI: `input_tokens` (`prompt_tokens` / `input_tokens`, which *include* cached tokens),
  `cache_read_tokens` (`cached_tokens`), `cache_write_tokens` 0, `output_tokens`.

`prompt_tokens` of a row normalises both: every input token, cached or not.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .prices import PriceTable

# UsageLog row statuses. `ok`: the provider answered 2xx. `upstream_status`: it answered with an
# error status (4xx/5xx). `upstream_error`: it could not be reached or broke off mid-answer.
# `budget_exhausted`: refused by the gateway, a cap was reached. `refused`: the gateway refused
# the request itself (host, path, key, model) and nothing was sent upstream.
FORWARDED = ("ok", "upstream_status", "upstream_error")


@dataclass
class Usage:
    """Token figures of one call, as the provider reported them (None: not reported)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    model: str | None = None  # the model the provider says answered
    response_id: str | None = None  # a Responses API response id (the only previous_response_id accepted later)

    def merge(self, other: Usage) -> None:
        """Take every figure `other` reports (later events override earlier ones)."""
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "model",
                     "response_id"):
            value = getattr(other, name)
            if value is not None:
                setattr(self, name, value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def anthropic_usage(obj: dict[str, Any]) -> Usage:
    """Usage of an Anthropic Messages body, or of one of its stream events."""
    kind = obj.get("type")
    if kind == "message_start" and isinstance(obj.get("message"), dict):
        obj = obj["message"]
    elif kind not in ("message", "message_delta"):
        return Usage()
    raw = obj.get("usage")
    out = Usage(model=obj.get("model") if isinstance(obj.get("model"), str) else None)
    if isinstance(raw, dict):
        out.input_tokens = _int(raw.get("input_tokens"))
        out.output_tokens = _int(raw.get("output_tokens"))
        out.cache_read_tokens = _int(raw.get("cache_read_input_tokens"))
        out.cache_write_tokens = _int(raw.get("cache_creation_input_tokens"))
    return out


def _openai_raw(raw: Any, model: Any) -> Usage:
    out = Usage(model=model if isinstance(model, str) else None)
    if not isinstance(raw, dict):
        return out
    out.input_tokens = _int(raw.get("input_tokens", raw.get("prompt_tokens")))
    out.output_tokens = _int(raw.get("output_tokens", raw.get("completion_tokens")))
    details = raw.get("input_tokens_details") or raw.get("prompt_tokens_details")
    if isinstance(details, dict):
        out.cache_read_tokens = _int(details.get("cached_tokens"))
    if out.input_tokens is not None:
        out.cache_write_tokens = 0
        out.cache_read_tokens = out.cache_read_tokens or 0
    return out


def openai_usage(obj: dict[str, Any]) -> Usage:
    """Usage of an OpenAI Responses or Chat Completions body, or of one of their stream events."""
    kind = obj.get("type")
    if isinstance(kind, str) and kind.startswith("response.") and isinstance(obj.get("response"), dict):
        obj = obj["response"]  # response.created / .completed / .incomplete / .failed
    if "usage" not in obj:
        out = Usage(model=obj.get("model") if isinstance(obj.get("model"), str) else None)
    else:
        out = _openai_raw(obj.get("usage"), obj.get("model"))
    if obj.get("object") == "response" and isinstance(obj.get("id"), str):
        out.response_id = obj["id"]
    return out


USAGE_READERS = {"anthropic": anthropic_usage, "openai": openai_usage}


class UsageReader:
    """Reads usage from a response body fed in chunks as they pass through.

    For `text/event-stream` it parses events as they complete; otherwise it keeps the body (up
    to `limit` bytes) and parses it once at the end.
    """

    def __init__(self, provider: str, *, streaming: bool, limit: int = 16 * 1024 * 1024) -> None:
        self._read = USAGE_READERS[provider]
        self.streaming = streaming
        self.usage = Usage()
        self._buf = b""
        self._held = b""
        self._limit = limit
        self.events = 0

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of the body."""
        if not self.streaming:
            if len(self._buf) < self._limit:
                self._buf += chunk
            return
        data = self._held + chunk
        # A CRLF may be split across two chunks: hold a trailing CR back until the next one.
        self._held = b"\r" if data.endswith(b"\r") else b""
        self._buf += (data[:-1] if self._held else data).replace(b"\r\n", b"\n")
        while b"\n\n" in self._buf:
            event, self._buf = self._buf.split(b"\n\n", 1)
            self._event(event)

    def _event(self, event: bytes) -> None:
        data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
        if not data or data == b"[DONE]":
            return
        try:
            obj = json.loads(data)
        except ValueError:
            return
        if isinstance(obj, dict):
            self.events += 1
            self.usage.merge(self._read(obj))

    def finish(self) -> Usage:
        """The usage found in the whole body."""
        if self.streaming:
            if self._buf.strip():
                self._event(self._buf)
        else:
            try:
                obj = json.loads(self._buf)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                self.usage.merge(self._read(obj))
        self._buf = b""
        return self.usage


@dataclass
class UsageRow:
    """One model call (or one refusal) as the gateway saw it."""

    seq: int
    turn: int | None
    wall_time: float
    provider: str | None
    endpoint: str | None
    model: str | None
    stream: bool
    status: str
    http_status: int
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    prompt_tokens: int = 0
    cost_usd: float | None = None
    price_version: str | None = None
    latency_s: float = 0.0
    ttfb_s: float | None = None
    detail: str | None = None
    cause: str | None = None  # a refusal's cause (model_gateway.policy: provider_tool, server_state, ...)
    reported: bool = False  # whether the provider reported usage at all
    queued_s: float = 0.0  # waited at the limiter for the provider's capacity (model_gateway.limiter)
    throttled_s: float = 0.0  # slept out the provider's "not now" answers before retrying
    retries: int = 0  # calls retried after a 429 / 529 / 503 (model_gateway.limits.RetryPolicy)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def priced_row(row: UsageRow, usage: Usage, prices: PriceTable) -> UsageRow:
    """Fill a row's token figures and cost from a call's usage."""
    row.reported = usage.input_tokens is not None or usage.output_tokens is not None
    row.input_tokens = usage.input_tokens or 0
    row.output_tokens = usage.output_tokens or 0
    row.cache_read_tokens = usage.cache_read_tokens or 0
    row.cache_write_tokens = usage.cache_write_tokens or 0
    if row.provider == "openai":
        fresh = max(row.input_tokens - row.cache_read_tokens, 0)
        row.prompt_tokens = row.input_tokens
    else:
        fresh = row.input_tokens
        row.prompt_tokens = row.input_tokens + row.cache_read_tokens + row.cache_write_tokens
    row.price_version = prices.version
    if row.reported:
        row.cost_usd = prices.cost(row.model, fresh_input=fresh, output=row.output_tokens,
                                   cache_read=row.cache_read_tokens, cache_write=row.cache_write_tokens)
    return row


@dataclass
class Totals:
    """What the attempt has used so far (forwarded calls only)."""

    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0


@dataclass
class UsageLog:
    """The attempt's usage log: rows in memory (for the control API) and optionally a JSONL file."""

    path: Path | None = None
    rows: list[UsageRow] = field(default_factory=list)
    turn: int | None = None
    totals: Totals = field(default_factory=Totals)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_row(self, **fields: Any) -> UsageRow:
        """A new row stamped with the current turn (seq is set when it is appended)."""
        return UsageRow(seq=0, turn=self.turn, wall_time=time.time(), **fields)

    def append(self, row: UsageRow) -> UsageRow:
        """Record a finished call; updates the totals the budget is checked against."""
        with self._lock:
            row.seq = len(self.rows) + 1
            self.rows.append(row)
            if row.status in FORWARDED:
                self.totals.requests += 1
                self.totals.tokens += row.prompt_tokens + row.output_tokens
                if row.cost_usd is not None:
                    self.totals.cost_usd = round(self.totals.cost_usd + row.cost_usd, 8)
                elif row.reported:
                    self.totals.unpriced += 1
            if self.path is not None:
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row.to_json(), sort_keys=True) + "\n")
        return row

    def after(self, seq: int, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows with seq > `seq`, ascending."""
        with self._lock:
            return [r.to_json() for r in self.rows[seq:seq + limit]]
