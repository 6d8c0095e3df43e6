"""What a harness says it did in one turn, read from the turn's folder (`turns/<n>/out/`).

- Claude Code (`claude-session/*.jsonl`, its own session log; `stdout.txt`, its JSON result):
  one model call per assistant message id, with the usage Claude Code recorded for it, its
  text, thinking and tool uses, and each tool's output from the tool_result that answered it.
- Codex (`stdout.txt` of `codex exec --json`): items in order (reasoning, messages, commands,
  MCP tool calls, file changes), cut into model calls where a tool's output is followed by new
  model output; usage only per `turn.completed` (Codex does not report each call's tokens).
- Any other command system: its stdout as the turn's answer, no model call it reports.

Nothing here is trusted for figures: the gateway's usage log is (orchestrator/trajectory/mismatch.py
compares the two). These files are written inside the agent's container, so every reader takes
malformed input without raising.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.jsonl import read_objects

MAX_TEXT = 20_000  # one message, thought or tool output kept in the trajectory (the rest is cut, marked)


@dataclass
class ToolUse:
    """One tool call of a model answer, with what the tool gave back."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str | None = None
    is_error: bool = False
    done_at: str | None = None  # when the harness recorded the tool's result (ISO 8601), if it did


@dataclass
class CallUsage:
    """Tokens as a harness reports them (Anthropic's split: `input` excludes cache reads and writes)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input, "output_tokens": self.output, "cache_read_tokens": self.cache_read,
                "cache_write_tokens": self.cache_write}


@dataclass
class HarnessCall:
    """One model call as the harness recorded it."""

    message: str = ""
    reasoning: str | None = None
    tool_uses: list[ToolUse] = field(default_factory=list)
    usage: CallUsage | None = None
    model: str | None = None
    timestamp: str | None = None


@dataclass
class HarnessTurn:
    """A turn's transcript as the harness kept it."""

    harness: str  # claude-code | codex | command | none
    calls: list[HarnessCall] = field(default_factory=list)
    per_call_usage: bool = False  # the harness reports each call's tokens (Claude Code does, Codex does not)
    total: CallUsage | None = None  # what the harness reports for the whole turn
    answer: str | None = None  # the final text (Claude Code's `result`, a command's stdout)
    notes: list[str] = field(default_factory=list)


def clip(text: str | None) -> str:
    """A text cut to MAX_TEXT characters, the cut marked."""
    text = text or ""
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n[... {len(text) - MAX_TEXT} more characters cut]"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _text_of(content: Any) -> str:
    """Text of a tool_result's content: a string, or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return "" if content is None else json.dumps(content, sort_keys=True)


# -- Claude Code ------------------------------------------------------------------------------------

def _claude_result(out: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((out / "stdout.txt").read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict) and doc.get("type") == "result":
        return doc
    for obj in read_objects(out / "stdout.txt"):  # stream-json: the last line is the result
        if obj.get("type") == "result":
            doc = obj
    return doc if isinstance(doc, dict) else None


def read_claude(out: Path) -> HarnessTurn:
    """Claude Code's session log: one call per assistant message id, in the order they began."""
    turn = HarnessTurn("claude-code", per_call_usage=True)
    entries: list[dict[str, Any]] = []
    for path in sorted((out / "claude-session").glob("*.jsonl")):
        entries.extend(read_objects(path))
    entries.sort(key=lambda e: str(e.get("timestamp") or ""))  # main session and sub-agents' files, in time order
    calls: dict[str, HarnessCall] = {}
    uses: dict[str, ToolUse] = {}
    for entry in entries:
        msg = entry.get("message")
        if not isinstance(msg, dict):
            continue
        blocks = _list(msg.get("content"))
        if entry.get("type") == "assistant":
            if msg.get("model") == "<synthetic>":
                continue  # written by Claude Code itself (an error shown as a message): no model call
            key = str(msg.get("id") or entry.get("requestId") or entry.get("uuid"))
            call = calls.get(key)
            if call is None:
                call = calls[key] = HarnessCall(model=msg.get("model"), timestamp=entry.get("timestamp"))
            usage = msg.get("usage")
            if isinstance(usage, dict):  # the entries of one message repeat its usage; the last one stands
                call.usage = CallUsage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
                                       _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens")))
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text":
                    call.message = (call.message + "\n" + str(b.get("text", ""))).strip("\n")
                elif b.get("type") == "thinking":
                    call.reasoning = ((call.reasoning or "") + str(b.get("thinking", ""))) or None
                elif b.get("type") == "tool_use":
                    use = ToolUse(str(b.get("id") or f"call-{len(uses) + 1}"), str(b.get("name") or "?"),
                                  _dict(b.get("input")))
                    uses[use.call_id] = use
                    call.tool_uses.append(use)
        elif entry.get("type") == "user":
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result" and str(b.get("tool_use_id")) in uses:
                    use = uses[str(b.get("tool_use_id"))]
                    use.output = clip(_text_of(b.get("content")))
                    use.is_error = bool(b.get("is_error"))
                    use.done_at = entry.get("timestamp")
    turn.calls = list(calls.values())
    result = _claude_result(out)
    if result is not None:
        turn.answer = clip(str(result.get("result") or "")) or None
        usage = _dict(result.get("usage"))
        turn.total = CallUsage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
                               _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens")))
    if not entries:
        turn.notes.append("no session log (claude-session/) was kept: the harness's model calls are unknown")
    return turn


# -- Codex ------------------------------------------------------------------------------------------

TOOL_ITEMS = ("command_execution", "mcp_tool_call", "file_change", "web_search")


def _codex_tool(item: dict[str, Any], n: int) -> ToolUse:
    kind = str(item.get("type"))
    call_id = str(item.get("id") or f"item-{n}")
    if kind == "command_execution":
        code = item.get("exit_code")
        return ToolUse(call_id, "shell", {"command": item.get("command")}, clip(str(item.get("aggregated_output") or "")),
                       is_error=isinstance(code, int) and code != 0)
    if kind == "mcp_tool_call":
        args = _dict(item.get("arguments"))
        result = item.get("result")
        output = _text_of(result.get("content")) if isinstance(result, dict) else _text_of(result)
        error = item.get("error")
        return ToolUse(call_id, f"mcp:{item.get('server')}/{item.get('tool')}", args,
                       clip(output or (json.dumps(error) if error else "")), is_error=bool(error) or item.get("status") == "failed")
    if kind == "file_change":
        return ToolUse(call_id, "apply_patch", {"changes": item.get("changes")}, str(item.get("status") or ""))
    return ToolUse(call_id, kind, {k: v for k, v in item.items() if k not in ("id", "type")})


def read_codex(out: Path) -> HarnessTurn:
    """`codex exec --json` events: completed items in order, cut into model calls."""
    turn = HarnessTurn("codex")
    total: CallUsage | None = None
    calls: list[HarnessCall] = []
    current: HarnessCall | None = None
    for n, event in enumerate(read_objects(out / "stdout.txt")):
        kind = event.get("type")
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            u = event["usage"]
            total = total or CallUsage()
            cached = _int(u.get("cached_input_tokens"))
            total.input += max(_int(u.get("input_tokens")) - cached, 0)  # OpenAI's input counts the cached part
            total.cache_read += cached
            total.output += _int(u.get("output_tokens"))
        elif kind in ("turn.failed", "error"):
            err = _dict(event.get("error")) or event
            turn.notes.append(f"codex reported {kind}: {clip(str(err.get('message') or ''))[:500]}")
        if kind != "item.completed" or not isinstance(event.get("item"), dict):
            continue
        item = event["item"]
        itype = str(item.get("type"))
        if itype == "error":  # Codex's own warning (e.g. unknown model metadata), not the model's output
            turn.notes.append(f"codex item error: {clip(str(item.get('message') or ''))[:500]}")
            continue
        # A model call's output is its reasoning, message and tool calls; once a tool has run, the
        # next model output is the next call's.
        if current is None or (current.tool_uses and itype not in TOOL_ITEMS):
            current = HarnessCall()
            calls.append(current)
        if itype == "reasoning":
            current.reasoning = ((current.reasoning or "") + str(item.get("text") or "")) or None
        elif itype == "agent_message":
            current.message = (current.message + "\n" + str(item.get("text") or "")).strip("\n")
            turn.answer = clip(str(item.get("text") or ""))
        elif itype in TOOL_ITEMS:
            current.tool_uses.append(_codex_tool(item, n))
    turn.calls, turn.total = calls, total
    return turn


def read_command(out: Path) -> HarnessTurn:
    """A command system of unknown format: its stdout is its answer."""
    try:
        text = (out / "stdout.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return HarnessTurn("command", answer=clip(text) or None)


def read_turn(out: Path, harness: str) -> HarnessTurn:
    """The transcript of one turn's output folder, read the way its harness writes it."""
    if harness == "claude-code":
        return read_claude(out)
    if harness == "codex":
        return read_codex(out)
    if harness == "policy":
        return HarnessTurn("policy")
    return read_command(out)
