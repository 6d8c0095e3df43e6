"""What a request body may ask the provider to do: an allowlist per API (issue 30).

The network seals the attempt; the provider is the one party outside it that acts on the
agent's behalf. A request may only ask the provider to *generate*: every tool it declares must
be executed by the client (inside the attempt), every input must be carried in the request
itself, and no state may live on the provider's side beyond what this attempt created.

Refused, whatever the API:

- provider-executed tools (Anthropic server tools, OpenAI hosted tools, remote MCP), unless the
  campaign names the tool's family in `provider_tools` (then the cell is labelled with it);
- request-level connectors and containers (`mcp_servers`, `container`), background mode,
  stored prompts, conversations, `item_reference`s, and a `previous_response_id` this attempt's
  gateway did not relay itself;
- inputs the provider would fetch: file ids, file/image URLs (only inline data passes);
- any top-level field, tool type, content block or input item type not listed here. The rule
  is an allowlist, so a provider's next server tool is closed the day it appears.

`store` is forced to false where the API has it (Responses, Chat Completions), and a streamed
Chat Completions request always asks for its usage (`stream_options.include_usage: true`), so
every call is metered and counts against the budget; `stream` must be a JSON boolean.

Decision (Anthropic-defined client tools): `bash_*`, `text_editor_*` and `memory_*` are
schema-less tools the *client* executes (the provider only emits `tool_use`), so they pass like
custom tools; `computer_*` is refused (no screen in an attempt, and no harness declares it),
as is OpenAI's `computer_use_preview`. OpenAI's `local_shell` / `apply_patch` are client tools
and pass; its `shell` passes only without a hosted `environment`.
"""
from __future__ import annotations

import re
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any


class PolicyRefusal(Exception):
    """A request body asks the provider for something outside the attempt."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause  # short, stable: `provider_tool`, `field`, `file_reference`, ...
        self.message = message


@dataclass(frozen=True)
class ToolFamily:
    """A provider-executed tool a campaign may allow on purpose, and what comes with it."""

    anthropic: str | None = None  # tool `type` pattern (full match)
    openai: str | None = None
    blocks: frozenset[str] = frozenset()  # Anthropic content blocks its use leaves in the history
    items: frozenset[str] = frozenset()  # Responses input items its use leaves in the history
    includes: frozenset[str] = frozenset()  # Responses `include` values about its output
    chat_fields: frozenset[str] = frozenset()  # Chat Completions top-level fields it needs


_RESULT_BLOCKS = frozenset({"server_tool_use"})
PROVIDER_TOOLS: dict[str, ToolFamily] = {
    "web_search": ToolFamily(
        anthropic=r"web_search_\d{8}", openai=r"web_search(_preview)?(_\d{4}_\d{2}_\d{2})?",
        blocks=_RESULT_BLOCKS | {"web_search_tool_result"}, items=frozenset({"web_search_call"}),
        includes=frozenset({"web_search_call.action.sources", "web_search_call.results"}),
        chat_fields=frozenset({"web_search_options"})),
    "web_fetch": ToolFamily(anthropic=r"web_fetch_\d{8}", blocks=_RESULT_BLOCKS | {"web_fetch_tool_result"}),
    "code_execution": ToolFamily(
        anthropic=r"code_execution_\d{8}", openai=r"code_interpreter",
        blocks=_RESULT_BLOCKS | {"code_execution_tool_result", "bash_code_execution_tool_result",
                                 "text_editor_code_execution_tool_result"},
        items=frozenset({"code_interpreter_call"}), includes=frozenset({"code_interpreter_call.outputs"})),
    "file_search": ToolFamily(openai=r"file_search", items=frozenset({"file_search_call"}),
                              includes=frozenset({"file_search_call.results"})),
    "image_generation": ToolFamily(openai=r"image_generation", items=frozenset({"image_generation_call"})),
}

# --- Anthropic Messages and count_tokens -------------------------------------------------------
ANTHROPIC_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream", "temperature",
    "top_k", "top_p", "thinking", "tool_choice", "tools", "service_tier", "output_config", "output_format",
    "context_management", "cache_control", "inference_geo", "speed",
})
ANTHROPIC_CLIENT_TOOL = re.compile(r"(bash|text_editor|memory)_\d{8}")
ANTHROPIC_BLOCKS = frozenset({"text", "image", "document", "tool_use", "tool_result", "thinking",
                              "redacted_thinking", "search_result"})
ANTHROPIC_INLINE_SOURCES = {"image": frozenset({"base64"}), "document": frozenset({"base64", "text", "content"})}

# --- OpenAI Responses ---------------------------------------------------------------------------
RESPONSES_FIELDS = frozenset({
    "model", "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata", "parallel_tool_calls",
    "reasoning", "store", "stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_p",
    "top_logprobs", "truncation", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention",
    "service_tier", "include", "previous_response_id", "client_metadata",
})
RESPONSES_CLIENT_TOOLS = frozenset({"function", "custom", "local_shell", "shell", "apply_patch"})
RESPONSES_ITEMS = frozenset({
    "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "reasoning", "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output",
    "apply_patch_call", "apply_patch_call_output",
})
RESPONSES_PARTS = frozenset({"input_text", "output_text", "refusal", "input_image", "input_file", "summary_text",
                             "reasoning_text"})
RESPONSES_INCLUDES = frozenset({"reasoning.encrypted_content", "message.output_text.logprobs"})

# --- OpenAI Chat Completions --------------------------------------------------------------------
CHAT_FIELDS = frozenset({
    "model", "messages", "frequency_penalty", "logit_bias", "logprobs", "max_completion_tokens", "max_tokens",
    "metadata", "n", "parallel_tool_calls", "presence_penalty", "prediction", "prompt_cache_key",
    "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier",
    "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p",
    "user", "verbosity", "functions", "function_call", "modalities",
})
CHAT_CLIENT_TOOLS = frozenset({"function", "custom"})
CHAT_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})

# Why a field is refused, when it is one of the known doors (else: "not among the fields ...").
KNOWN_DOORS = {
    "mcp_servers": ("connector", "request-level MCP connectors run on the provider's side"),
    "container": ("container", "provider containers run code on the provider's side and keep state there"),
    "background": ("background", "background mode keeps the response on the provider's side"),
    "conversation": ("server_state", "a provider-side conversation is state this attempt did not create"),
    "prompt": ("server_state", "a stored prompt is provider-side state this attempt did not create"),
    "tool_resources": ("file_reference", "tool resources point at provider-side files or vector stores"),
    "web_search_options": ("provider_tool", "web search runs on the provider's side"),
    "audio": ("field", "audio output is not offered through the gateway"),
}


@dataclass
class Verdict:
    """A request that may be forwarded: the body to send and whether it was rewritten."""

    doc: dict[str, Any]
    changed: bool = False
    notes: list[str] = field(default_factory=list)


def allowed_families(names: Iterable[str]) -> list[ToolFamily]:
    """The tool families of the campaign's `provider_tools` (unknown names raise ValueError)."""
    unknown = sorted(set(names) - set(PROVIDER_TOOLS))
    if unknown:
        raise ValueError(f"unknown provider tool(s) {', '.join(unknown)} (known: {', '.join(sorted(PROVIDER_TOOLS))})")
    return [PROVIDER_TOOLS[n] for n in sorted(set(names))]


def check_request(endpoint: str, doc: dict[str, Any], *, provider_tools: Iterable[str] = (),
                  response_ids: Container[str] = frozenset()) -> Verdict:
    """Check one request body of `endpoint` (messages, count_tokens, responses, chat).

    Returns what to forward; raises PolicyRefusal naming the cause. `response_ids` are the
    Responses ids this attempt's gateway relayed (the only `previous_response_id`s accepted).
    """
    families = allowed_families(provider_tools)
    if doc.get("stream") is not None and not isinstance(doc["stream"], bool):
        # A lenient server reads "true" or 1 as a stream, the gateway would not (and a chat stream
        # would then go unmetered): only a JSON boolean is forwarded.
        raise PolicyRefusal("shape", "stream must be true or false")
    if endpoint in ("messages", "count_tokens"):
        _anthropic(doc, families)
        return Verdict(doc)
    if endpoint == "responses":
        _responses(doc, families, response_ids)
    elif endpoint == "chat":
        _chat(doc, families)
    else:
        raise PolicyRefusal("endpoint", f"endpoint {endpoint!r} has no request policy")
    out, notes = doc, []
    if doc.get("store") is not False:
        # Nothing of the attempt is kept on the provider's side (and nothing can be continued later).
        out, notes = dict(out, store=False), ["store set to false"]
    if endpoint == "chat" and doc.get("stream") is True:
        options = _typed({} if doc.get("stream_options") is None else doc["stream_options"], "stream_options")
        if options.get("include_usage") is not True:
            # A Chat Completions stream reports usage only when asked: without it the call would
            # be unmetered and outside the budget (OpenAI, vLLM, llama.cpp and Ollama alike).
            out = dict(out, stream_options={**options, "include_usage": True})
            notes.append("stream_options.include_usage set to true")
    return Verdict(out, changed=out is not doc, notes=notes)


def _fields(doc: dict[str, Any], allowed: frozenset[str], api: str, extra: frozenset[str] = frozenset()) -> None:
    for name in doc:
        if name in allowed or name in extra:
            continue
        cause, why = KNOWN_DOORS.get(name, ("field", f"it is not among the fields the gateway forwards to {api}"))
        raise PolicyRefusal(cause, f"request field {name!r} is refused: {why}")


def _tool_refusal(kind: str, where: str) -> PolicyRefusal:
    return PolicyRefusal("provider_tool", f"tool type {kind!r} ({where}) is refused: only tools the client "
                         "executes inside the attempt are forwarded (function/custom); provider-executed tools "
                         "reach outside it. A campaign may allow a named one with model_access.provider_tools")


def _family_match(families: list[ToolFamily], api: str, kind: str) -> bool:
    return any((pattern := getattr(f, api)) and re.fullmatch(pattern, kind) for f in families)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise PolicyRefusal("shape", f"{where} must be a list")
    return value


def _typed(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PolicyRefusal("shape", f"{where} must be an object")
    return value


# --- Anthropic -------------------------------------------------------------------------------------

def _anthropic(doc: dict[str, Any], families: list[ToolFamily]) -> None:
    _fields(doc, ANTHROPIC_FIELDS, "the Messages API")
    blocks = ANTHROPIC_BLOCKS.union(*(f.blocks for f in families))
    for i, tool in enumerate(_list(doc.get("tools", []), "tools")):
        tool = _typed(tool, f"tools[{i}]")
        kind = tool.get("type")
        if kind in (None, "custom") or (isinstance(kind, str) and ANTHROPIC_CLIENT_TOOL.fullmatch(kind)):
            continue
        if isinstance(kind, str) and _family_match(families, "anthropic", kind):
            continue
        raise _tool_refusal(str(kind), f"tools[{i}]")
    system = doc.get("system")
    if isinstance(system, list):
        _anthropic_blocks(system, "system", blocks)
    for i, message in enumerate(_list(doc.get("messages", []), "messages")):
        content = _typed(message, f"messages[{i}]").get("content")
        if isinstance(content, list):
            _anthropic_blocks(content, f"messages[{i}].content", blocks)


def _anthropic_blocks(items: list[Any], where: str, allowed: frozenset[str]) -> None:
    for j, block in enumerate(items):
        here = f"{where}[{j}]"
        block = _typed(block, here)
        kind = block.get("type")
        if kind not in allowed:
            cause = "provider_tool" if isinstance(kind, str) and ("tool" in kind or kind.startswith("mcp")) else "content"
            raise PolicyRefusal(cause, f"content block type {kind!r} ({here}) is refused: not among the block "
                                "types the gateway forwards")
        sources = ANTHROPIC_INLINE_SOURCES.get(kind)
        if sources is not None:
            source = _typed(block.get("source"), f"{here}.source")
            if source.get("type") not in sources:
                raise PolicyRefusal("file_reference", f"{kind} source type {source.get('type')!r} ({here}) is refused: "
                                    "the provider would fetch it (a URL or a stored file); send the data inline")
            if isinstance(source.get("content"), list):
                _anthropic_blocks(source["content"], f"{here}.source.content", allowed)
        if isinstance(block.get("content"), list):  # tool results, search results: nested blocks
            _anthropic_blocks(block["content"], f"{here}.content", allowed)


# --- OpenAI Responses ---------------------------------------------------------------------------------

def _responses(doc: dict[str, Any], families: list[ToolFamily], response_ids: Container[str]) -> None:
    _fields(doc, RESPONSES_FIELDS, "the Responses API")
    previous = doc.get("previous_response_id")
    if previous is not None and not (isinstance(previous, str) and previous in response_ids):
        raise PolicyRefusal("server_state", f"previous_response_id {previous!r} is refused: it is not a response "
                            "this attempt received; provider-side state of other attempts cannot be continued")
    includes = RESPONSES_INCLUDES.union(*(f.includes for f in families))
    for value in _list(doc.get("include", []), "include"):
        if value not in includes:
            raise PolicyRefusal("field", f"include value {value!r} is refused: not among the values the gateway "
                                "forwards")
    _responses_tools(_list(doc.get("tools", []), "tools"), "tools", families, nested=False)
    _tool_choice(doc.get("tool_choice"), families)
    items = RESPONSES_ITEMS.union(*(f.items for f in families))
    value = doc.get("input")
    if value is None or isinstance(value, str):
        return
    for i, item in enumerate(_list(value, "input")):
        item = _typed(item, f"input[{i}]")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "item_reference":
            raise PolicyRefusal("server_state", f"input[{i}]: item_reference is refused: it points at "
                                "provider-side state")
        if kind not in items:
            cause = "provider_tool" if isinstance(kind, str) and kind.endswith("_call") else "content"
            raise PolicyRefusal(cause, f"input item type {kind!r} (input[{i}]) is refused: not among the item types "
                                "the gateway forwards")
        for key in ("content", "output", "summary"):
            if isinstance(item.get(key), list):
                _responses_parts(item[key], f"input[{i}].{key}")


def _responses_tools(tools: list[Any], where: str, families: list[ToolFamily], *, nested: bool) -> None:
    for i, tool in enumerate(tools):
        here = f"{where}[{i}]"
        tool = _typed(tool, here)
        kind = tool.get("type")
        if kind == "namespace" and not nested:  # a named group of tools (Codex's sub-agent tools)
            _responses_tools(_list(tool.get("tools", []), f"{here}.tools"), f"{here}.tools", families, nested=True)
            continue
        if kind == "shell" and _typed(tool.get("environment") or {}, f"{here}.environment").get("type",
                                                                                               "local") != "local":
            raise PolicyRefusal("container", f"{here}: a shell tool with a hosted environment is refused: it "
                                "runs on the provider's side")
        if kind in RESPONSES_CLIENT_TOOLS or (isinstance(kind, str) and _family_match(families, "openai", kind)):
            continue
        raise _tool_refusal(str(kind), here)


def _tool_choice(choice: Any, families: list[ToolFamily]) -> None:
    """A forced choice may name only a client tool (or a family the campaign allowed)."""
    if not isinstance(choice, dict):
        return
    kind = choice.get("type")
    if kind in ("function", "custom", "allowed_tools", "tool", "auto", "any", "none"):
        for i, tool in enumerate(choice.get("tools") or []):  # allowed_tools: a subset of `tools`
            inner = _typed(tool, f"tool_choice.tools[{i}]").get("type")
            if inner not in RESPONSES_CLIENT_TOOLS | CHAT_CLIENT_TOOLS and not (
                    isinstance(inner, str) and _family_match(families, "openai", inner)):
                raise _tool_refusal(str(inner), f"tool_choice.tools[{i}]")
        return
    if isinstance(kind, str) and _family_match(families, "openai", kind):
        return
    raise _tool_refusal(str(kind), "tool_choice")


def _responses_parts(parts: list[Any], where: str) -> None:
    for j, part in enumerate(parts):
        here = f"{where}[{j}]"
        part = _typed(part, here)
        kind = part.get("type")
        if kind not in RESPONSES_PARTS:
            raise PolicyRefusal("content", f"content part type {kind!r} ({here}) is refused")
        if kind == "input_image":
            _inline_only(part, here, url_key="image_url")
        if kind == "input_file":
            _inline_only(part, here, url_key="file_url")


def _inline_only(part: dict[str, Any], where: str, *, url_key: str) -> None:
    if part.get("file_id") is not None:
        raise PolicyRefusal("file_reference", f"{where}: file_id is refused: it names a file stored on the "
                            "provider's side; send the data inline")
    url = part.get(url_key)
    if isinstance(url, dict):
        url = url.get("url")
    if url is not None and not (isinstance(url, str) and url.startswith("data:")):
        raise PolicyRefusal("file_reference", f"{where}: a {url_key} that is not a data: URL is refused: the "
                            "provider would fetch it from outside the attempt")


# --- OpenAI Chat Completions ------------------------------------------------------------------------

def _chat(doc: dict[str, Any], families: list[ToolFamily]) -> None:
    _fields(doc, CHAT_FIELDS, "the Chat Completions API", frozenset().union(*(f.chat_fields for f in families)))
    modalities = doc.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise PolicyRefusal("field", "modalities other than ['text'] are refused")
    for i, tool in enumerate(_list(doc.get("tools", []), "tools")):
        kind = _typed(tool, f"tools[{i}]").get("type")
        if kind not in CHAT_CLIENT_TOOLS:
            raise _tool_refusal(str(kind), f"tools[{i}]")
    _tool_choice(doc.get("tool_choice"), families)
    for i, message in enumerate(_list(doc.get("messages", []), "messages")):
        if _typed(message, f"messages[{i}]").get("audio") is not None:
            raise PolicyRefusal("server_state", f"messages[{i}].audio is refused: it names an audio response "
                                "stored on the provider's side")
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j, part in enumerate(content):
            here = f"messages[{i}].content[{j}]"
            part = _typed(part, here)
            kind = part.get("type")
            if kind not in CHAT_PARTS:
                raise PolicyRefusal("content", f"content part type {kind!r} ({here}) is refused")
            if kind == "image_url":
                _inline_only(part, here, url_key="image_url")
            if kind == "file":
                _inline_only(_typed(part.get("file"), f"{here}.file"), f"{here}.file", url_key="file_url")
