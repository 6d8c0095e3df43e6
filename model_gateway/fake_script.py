"""The scripted conversation the fake provider plays, and its answers in each provider's format.

A script file (YAML or JSON):

    model: fake-claude            # reported as the answering model (default: the request's)
    match: tools                  # which requests take the next step: `tools` (only requests
                                  # that carry tools: an agent's main loop) or `any`
    require_key: sk-real-...      # optional: answer 401 to any other key (proves the key swap)
    steps:                        # one per matching request, in order
      - content:
          - {type: text, text: "Let me look."}
          - {type: tool_use, name: Bash, input: {command: "erp whoami", description: "who am I"}}
        usage: {input_tokens: 1200, output_tokens: 40, cache_read_tokens: 0, cache_write_tokens: 0}
      - fail: {status: 529, type: overloaded_error, message: "Overloaded"}   # retry_after: N (a header)
    otherwise:                    # every other request, and every request after the last step
      content: [{type: text, text: "Done."}]
      usage: {input_tokens: 10, output_tokens: 2}

`tool_use` becomes a `tool_use` block (Anthropic), a `function_call` item (Responses) or a
`tool_calls` entry (Chat Completions); its `input` is the tool's arguments.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True)
class Step:
    """One scripted answer: content blocks and usage, or a failure."""

    content: tuple[dict[str, Any], ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    fail: dict[str, Any] | None = None
    delay_s: float = 0.0  # before the answer starts
    chunk_delay_s: float = 0.0  # between streamed events

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b.get("type") == "tool_use" for b in self.content) else "end_turn"


@dataclass(frozen=True)
class Script:
    """A whole scripted conversation."""

    steps: tuple[Step, ...]
    otherwise: Step
    model: str | None = None
    match: str = "tools"
    require_key: str | None = None


def _step(raw: Any, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a step is a mapping")
    extra = set(raw) - {"content", "usage", "fail", "delay_s", "chunk_delay_s"}
    if extra:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    content = raw.get("content") or []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") not in ("text", "tool_use"):
            raise ValueError(f"{where}.content[{i}]: a block is {{type: text, text}} or {{type: tool_use, name, input}}")
        if block["type"] == "tool_use" and not (isinstance(block.get("name"), str) and isinstance(block.get("input"), dict)):
            raise ValueError(f"{where}.content[{i}]: tool_use needs `name` and an `input` mapping")
    usage = raw.get("usage") or {}
    bad = set(usage) - set(USAGE_KEYS)
    if bad:
        raise ValueError(f"{where}.usage: unknown key(s) {', '.join(sorted(bad))}; known: {', '.join(USAGE_KEYS)}")
    fail = raw.get("fail")
    if fail is not None and not (isinstance(fail, dict) and isinstance(fail.get("status"), int)):
        raise ValueError(f"{where}.fail: needs an integer `status`")
    return Step(content=tuple(content), usage={k: int(v) for k, v in usage.items()}, fail=fail,
                delay_s=float(raw.get("delay_s", 0.0)), chunk_delay_s=float(raw.get("chunk_delay_s", 0.0)))


def parse_script(doc: Any, where: str = "script") -> Script:
    """Validate a script document; ValueError names the field."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: a script is a mapping with `steps`")
    extra = set(doc) - {"steps", "otherwise", "model", "match", "require_key"}
    if extra:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    if doc.get("match", "tools") not in ("tools", "any"):
        raise ValueError(f"{where}.match: `tools` or `any`")
    steps = tuple(_step(s, f"{where}.steps[{i}]") for i, s in enumerate(doc.get("steps") or []))
    otherwise = _step(doc.get("otherwise") or {"content": [{"type": "text", "text": "Done."}]}, f"{where}.otherwise")
    return Script(steps=steps, otherwise=otherwise, model=doc.get("model"), match=doc.get("match", "tools"),
                  require_key=doc.get("require_key"))


def load_script(path: Path) -> Script:
    """Read a script file (YAML or JSON)."""
    return parse_script(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))


# --- answers in each API's format -----------------------------------------------------------

def sse(event: str | None, data: dict[str, Any] | str) -> bytes:
    """One server-sent event."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def anthropic_usage(u: dict[str, int]) -> dict[str, int]:
    return {"input_tokens": u.get("input_tokens", 0), "output_tokens": u.get("output_tokens", 0),
            "cache_read_input_tokens": u.get("cache_read_tokens", 0),
            "cache_creation_input_tokens": u.get("cache_write_tokens", 0)}


def anthropic_blocks(step: Step, ident: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, b in enumerate(step.content):
        if b["type"] == "text":
            out.append({"type": "text", "text": b.get("text", "")})
        else:
            out.append({"type": "tool_use", "id": f"toolu_{ident}_{i}", "name": b["name"], "input": b["input"]})
    return out


def anthropic_message(step: Step, model: str, ident: str) -> dict[str, Any]:
    return {"id": f"msg_{ident}", "type": "message", "role": "assistant", "model": model,
            "content": anthropic_blocks(step, ident), "stop_reason": step.stop_reason, "stop_sequence": None,
            "usage": anthropic_usage(step.usage)}


def anthropic_events(step: Step, model: str, ident: str) -> list[bytes]:
    usage = anthropic_usage(step.usage)
    start_usage = dict(usage, output_tokens=min(1, usage["output_tokens"]))
    events = [sse("message_start", {"type": "message_start", "message": {
        "id": f"msg_{ident}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": start_usage}}), sse("ping", {"type": "ping"})]
    for i, block in enumerate(anthropic_blocks(step, ident)):
        if block["type"] == "text":
            events.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                      "content_block": {"type": "text", "text": ""}}))
            events.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            events.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            events.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(sse("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": step.stop_reason, "stop_sequence": None},
                                        "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(sse("message_stop", {"type": "message_stop"}))
    return events


def openai_usage_responses(u: dict[str, int]) -> dict[str, Any]:
    inp = u.get("input_tokens", 0) + u.get("cache_read_tokens", 0)
    out = u.get("output_tokens", 0)
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": u.get("cache_read_tokens", 0)},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": inp + out}


def responses_items(step: Step, ident: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i, b in enumerate(step.content):
        if b["type"] == "text":
            items.append({"type": "message", "id": f"msg_{ident}_{i}", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": b.get("text", ""), "annotations": []}]})
        else:
            call = {"type": "function_call", "id": f"fc_{ident}_{i}", "call_id": f"call_{ident}_{i}",
                    "name": b["name"], "arguments": json.dumps(b["input"]), "status": "completed"}
            if b.get("namespace"):  # a tool of a `namespace` tool (Codex's MCP servers: mcp__<server>)
                call["namespace"] = b["namespace"]
            items.append(call)
    return items


def responses_body(step: Step, model: str, ident: str) -> dict[str, Any]:
    return {"id": f"resp_{ident}", "object": "response", "status": "completed", "model": model,
            "output": responses_items(step, ident), "usage": openai_usage_responses(step.usage)}


def responses_events(step: Step, model: str, ident: str) -> list[bytes]:
    base = {"id": f"resp_{ident}", "object": "response", "model": model, "output": []}
    events = [sse("response.created", {"type": "response.created", "response": dict(base, status="in_progress")})]
    items = responses_items(step, ident)
    for i, item in enumerate(items):
        events.append(sse("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                         "item": dict(item, status="in_progress")}))
        if item["type"] == "message":
            events.append(sse("response.output_text.delta", {"type": "response.output_text.delta", "output_index": i,
                                                             "item_id": item["id"], "content_index": 0,
                                                             "delta": item["content"][0]["text"]}))
        events.append(sse("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                        "item": item}))
    events.append(sse("response.completed", {"type": "response.completed", "response": responses_body(step, model, ident)}))
    return events


def chat_usage(u: dict[str, int]) -> dict[str, Any]:
    inp = u.get("input_tokens", 0) + u.get("cache_read_tokens", 0)
    out = u.get("output_tokens", 0)
    return {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out,
            "prompt_tokens_details": {"cached_tokens": u.get("cache_read_tokens", 0)}}


def chat_message(step: Step, ident: str) -> dict[str, Any]:
    text = "".join(b.get("text", "") for b in step.content if b["type"] == "text")
    calls = [{"id": f"call_{ident}_{i}", "type": "function",
              "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
             for i, b in enumerate(step.content) if b["type"] == "tool_use"]
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def chat_body(step: Step, model: str, ident: str) -> dict[str, Any]:
    msg = chat_message(step, ident)
    return {"id": f"chatcmpl-{ident}", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if "tool_calls" in msg else "stop"}],
            "usage": chat_usage(step.usage)}


def chat_events(step: Step, model: str, ident: str, include_usage: bool) -> list[bytes]:
    msg = chat_message(step, ident)
    head = {"id": f"chatcmpl-{ident}", "object": "chat.completion.chunk", "model": model}
    delta: dict[str, Any] = {"role": "assistant", "content": msg["content"] or ""}
    if "tool_calls" in msg:
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(msg["tool_calls"])]
    events = [sse(None, dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
              sse(None, dict(head, choices=[{"index": 0, "delta": {},
                                             "finish_reason": "tool_calls" if "tool_calls" in msg else "stop"}]))]
    if include_usage:
        events.append(sse(None, dict(head, choices=[], usage=chat_usage(step.usage))))
    events.append(b"data: [DONE]\n\n")
    return events
