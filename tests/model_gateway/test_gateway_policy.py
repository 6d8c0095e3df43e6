"""The request policy of the gateway (model_gateway.policy), as a table both ways: every shape the
agents and the APIs legitimately send passes unchanged; every way of making the provider act or
fetch outside the attempt is refused with its cause; unknown fields, tools, blocks and items are
refused (the rule is an allowlist). Also: Codex CLI 0.163's real requests (recorded from the
binary with web search off) pass unchanged, and its default request (web search on) is refused.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from model_gateway.config import GatewayConfig
from model_gateway.metering import UsageReader
from model_gateway.policy import PROVIDER_TOOLS, PolicyRefusal, check_request

CODEX_RECORD = Path(__file__).parent / "data" / "codex-0.163-requests.jsonl"
B64 = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
FN = {"type": "function", "name": "exec", "description": "run", "parameters": {"type": "object", "properties": {}}}


def msg(*content: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": list(content)}], **extra}


def resp(*items: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "input": list(items) or "hi", "store": False, **extra}


def chat(*content: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": list(content) or "hi"}], "store": False, **extra}


TEXT = {"type": "text", "text": "hi"}
CUSTOM_TOOL = {"name": "Bash", "description": "shell", "input_schema": {"type": "object"}}

# (endpoint, body) that pass unchanged.
ALLOWED: dict[str, tuple[str, dict[str, Any]]] = {
    "messages plain": ("messages", {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}),
    "messages all safe fields": ("messages", msg(
        TEXT, system=[{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}], metadata={"user_id": "u"},
        stop_sequences=["x"], stream=True, temperature=0.1, top_k=5, top_p=0.9,
        thinking={"type": "enabled", "budget_tokens": 1024}, tool_choice={"type": "auto"}, tools=[CUSTOM_TOOL],
        service_tier="auto", output_config={"effort": "high"}, context_management={"edits": []},
        cache_control={"type": "ephemeral"}, inference_geo="us", speed="standard")),
    "messages custom tool typed": ("messages", msg(TEXT, tools=[dict(CUSTOM_TOOL, type="custom")])),
    "messages anthropic client tools": ("messages", msg(TEXT, tools=[
        {"type": "bash_20250124", "name": "bash"}, {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
        {"type": "memory_20250818", "name": "memory"}])),
    "messages history blocks": ("messages", {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": [TEXT, {"type": "image", "source": B64},
                                     {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                                     "data": "doc"}}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"},
                                          {"type": "redacted_thinking", "data": "x"},
                                          {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": [
            TEXT, {"type": "image", "source": B64},
            {"type": "search_result", "source": "erp", "title": "t", "content": [TEXT]}]}]}]}),
    "count_tokens": ("count_tokens", {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                      "tools": [CUSTOM_TOOL], "system": "s"}),
    "responses string input": ("responses", resp()),
    "responses all safe fields": ("responses", resp(
        {"role": "developer", "content": "x"}, instructions="i", max_output_tokens=10, max_tool_calls=3,
        metadata={"a": "b"}, parallel_tool_calls=True, reasoning={"effort": "low", "summary": "auto"}, stream=True,
        temperature=0.2, text={"format": {"type": "text"}}, tool_choice="auto", tools=[FN], top_p=1, truncation="auto",
        user="u", safety_identifier="s", prompt_cache_key="k", service_tier="auto",
        include=["reasoning.encrypted_content"], client_metadata={"x": "y"})),
    "responses client tools": ("responses", resp(tools=[
        FN, {"type": "custom", "name": "apply_patch", "description": "d"}, {"type": "local_shell"},
        {"type": "shell"}, {"type": "apply_patch"},
        {"type": "namespace", "name": "agents", "description": "d", "tools": [FN]}])),
    "responses history items": ("responses", resp(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"},
                                                        {"type": "input_image", "image_url": "data:image/png;base64,AA"},
                                                        {"type": "input_file", "filename": "a.txt",
                                                         "file_data": "data:text/plain;base64,AA"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}],
         "encrypted_content": "e"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
        {"type": "function_call", "call_id": "c1", "name": "exec", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "p"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"})),
    "responses forced function": ("responses", resp(tools=[FN], tool_choice={"type": "function", "name": "exec"})),
    "responses allowed_tools of functions": ("responses", resp(tools=[FN], tool_choice={
        "type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "exec"}]})),
    "chat all safe fields": ("chat", chat(
        {"type": "text", "text": "t"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
        {"type": "file", "file": {"filename": "a", "file_data": "data:application/pdf;base64,AA"}},
        frequency_penalty=0, logit_bias={}, logprobs=False, max_completion_tokens=9, max_tokens=9, metadata={},
        n=1, parallel_tool_calls=True, presence_penalty=0, prompt_cache_key="k", reasoning_effort="low",
        response_format={"type": "text"}, safety_identifier="s", seed=1, service_tier="auto", stop=["x"],
        stream=True, stream_options={"include_usage": True}, temperature=1, tool_choice="auto",
        tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}], top_logprobs=0, top_p=1,
        user="u", verbosity="low", modalities=["text"])),
}

# (endpoint, body, cause) that are refused.
REFUSED: dict[str, tuple[str, dict[str, Any], str]] = {
    "anthropic web_search": ("messages", msg(TEXT, tools=[{"type": "web_search_20250305", "name": "web_search"}]),
                             "provider_tool"),
    "anthropic web_fetch": ("messages", msg(TEXT, tools=[{"type": "web_fetch_20250910", "name": "web_fetch"}]),
                            "provider_tool"),
    "anthropic code_execution": ("messages", msg(TEXT, tools=[{"type": "code_execution_20250825",
                                                               "name": "code_execution"}]), "provider_tool"),
    "anthropic computer": ("messages", msg(TEXT, tools=[{"type": "computer_20250124", "name": "computer",
                                                         "display_width_px": 1, "display_height_px": 1}]),
                           "provider_tool"),
    "anthropic mcp_toolset": ("messages", msg(TEXT, tools=[{"type": "mcp_toolset", "mcp_server_name": "x"}]),
                              "provider_tool"),
    "anthropic tool_search": ("messages", msg(TEXT, tools=[{"type": "tool_search_tool_regex_20251119",
                                                            "name": "tool_search"}]), "provider_tool"),
    "anthropic next server tool": ("messages", msg(TEXT, tools=[{"type": "browse_20270101", "name": "b"}]),
                                   "provider_tool"),
    "anthropic mcp_servers": ("messages", msg(TEXT, mcp_servers=[{"type": "url", "url": "https://evil.example/mcp",
                                                                  "name": "x"}]), "connector"),
    "anthropic container": ("messages", msg(TEXT, container="container_abc"), "container"),
    "anthropic unknown field": ("messages", msg(TEXT, fallbacks=[{"model": "other"}]), "field"),
    "anthropic image url": ("messages", msg({"type": "image", "source": {"type": "url",
                                                                         "url": "https://evil.example/a.png"}}),
                            "file_reference"),
    "anthropic document file id": ("messages", msg({"type": "document", "source": {"type": "file",
                                                                                   "file_id": "file_1"}}),
                                   "file_reference"),
    "anthropic url inside tool_result": ("messages", msg({"type": "tool_result", "tool_use_id": "t", "content": [
        {"type": "document", "source": {"type": "url", "url": "https://evil.example/x.pdf"}}]}), "file_reference"),
    "anthropic container_upload block": ("messages", msg({"type": "container_upload", "file_id": "f"}), "content"),
    "anthropic server tool history": ("messages", msg({"type": "web_search_tool_result", "tool_use_id": "x",
                                                      "content": []}), "provider_tool"),
    "anthropic mcp_tool_use history": ("messages", msg({"type": "mcp_tool_use", "id": "x", "name": "n",
                                                       "server_name": "s", "input": {}}), "provider_tool"),
    "anthropic unknown block": ("messages", msg({"type": "hologram", "data": "x"}), "content"),
    "count_tokens web_search": ("count_tokens", {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                                 "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
                                "provider_tool"),
    "count_tokens mcp_servers": ("count_tokens", {"model": "m", "messages": [], "mcp_servers": []}, "connector"),
    "responses web_search": ("responses", resp(tools=[{"type": "web_search"}]), "provider_tool"),
    "responses web_search_preview": ("responses", resp(tools=[{"type": "web_search_preview_2025_03_11"}]),
                                     "provider_tool"),
    "responses file_search": ("responses", resp(tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}]),
                              "provider_tool"),
    "responses code_interpreter": ("responses", resp(tools=[{"type": "code_interpreter",
                                                            "container": {"type": "auto"}}]), "provider_tool"),
    "responses image_generation": ("responses", resp(tools=[{"type": "image_generation"}]), "provider_tool"),
    "responses remote mcp": ("responses", resp(tools=[{"type": "mcp", "server_label": "x",
                                                      "server_url": "https://evil.example/mcp"}]), "provider_tool"),
    "responses computer_use": ("responses", resp(tools=[{"type": "computer_use_preview", "display_width": 1,
                                                        "display_height": 1, "environment": "linux"}]),
                               "provider_tool"),
    "responses hosted shell": ("responses", resp(tools=[{"type": "shell", "environment": {"type": "container_auto"}}]),
                               "container"),
    "responses tool inside namespace": ("responses", resp(tools=[{"type": "namespace", "name": "n",
                                                                  "tools": [{"type": "web_search"}]}]),
                                        "provider_tool"),
    "responses next hosted tool": ("responses", resp(tools=[{"type": "browser_2027"}]), "provider_tool"),
    "responses background": ("responses", resp(background=True), "background"),
    "responses conversation": ("responses", resp(conversation="conv_1"), "server_state"),
    "responses stored prompt": ("responses", resp(prompt={"id": "pmpt_1"}), "server_state"),
    "responses previous_response_id of another attempt": ("responses", resp(previous_response_id="resp_other"),
                                                          "server_state"),
    "responses item_reference": ("responses", resp({"type": "item_reference", "id": "msg_1"}), "server_state"),
    "responses input_file id": ("responses", resp({"role": "user", "content": [{"type": "input_file",
                                                                               "file_id": "file_1"}]}),
                                "file_reference"),
    "responses input_file url": ("responses", resp({"role": "user", "content": [{"type": "input_file",
                                                                                "file_url": "https://e.example/a"}]}),
                                 "file_reference"),
    "responses input_image url": ("responses", resp({"role": "user", "content": [{"type": "input_image",
                                                                                 "image_url": "https://e.example/a"}]}),
                                  "file_reference"),
    "responses web_search_call history": ("responses", resp({"type": "web_search_call", "id": "ws_1",
                                                             "status": "completed"}), "provider_tool"),
    "responses hosted include": ("responses", resp(include=["file_search_call.results"]), "field"),
    "responses unknown field": ("responses", resp(context_management=[{"type": "compaction"}]), "field"),
    "chat web_search_options": ("chat", chat(web_search_options={}), "provider_tool"),
    "chat hosted tool": ("chat", chat(tools=[{"type": "web_search"}]), "provider_tool"),
    "chat image url": ("chat", chat({"type": "image_url", "image_url": {"url": "https://evil.example/a.png"}}),
                       "file_reference"),
    "chat file id": ("chat", chat({"type": "file", "file": {"file_id": "file_1"}}), "file_reference"),
    "chat audio": ("chat", chat(audio={"voice": "x", "format": "mp3"}, modalities=["text", "audio"]), "field"),
    "responses forced hosted tool": ("responses", resp(tool_choice={"type": "web_search_preview"}), "provider_tool"),
    "responses allowed_tools with hosted tool": ("responses", resp(tools=[FN], tool_choice={
        "type": "allowed_tools", "mode": "auto", "tools": [{"type": "file_search"}]}), "provider_tool"),
    "chat stored audio reference": ("chat", {"model": "m", "store": False, "messages": [
        {"role": "assistant", "audio": {"id": "audio_1"}}]}, "server_state"),
    "anthropic url inside search_result": ("messages", msg({"type": "search_result", "source": "s", "title": "t",
                                                           "content": [{"type": "image", "source": {
                                                               "type": "url", "url": "https://e.example/i"}}]}),
                                           "file_reference"),
    "chat unknown field": ("chat", chat(tool_resources={"code_interpreter": {"file_ids": ["f"]}}), "file_reference"),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_allowed_shapes_pass_unchanged(name: str) -> None:
    endpoint, body = ALLOWED[name]
    before = copy.deepcopy(body)
    verdict = check_request(endpoint, body)
    assert not verdict.changed and verdict.doc == before


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_shapes_are_refused_with_their_cause(name: str) -> None:
    endpoint, body, cause = REFUSED[name]
    with pytest.raises(PolicyRefusal) as info:
        check_request(endpoint, body)
    assert info.value.cause == cause, info.value.message
    assert "refused" in info.value.message


def test_store_is_forced_false_where_the_api_has_it() -> None:
    for endpoint, body in (("responses", {"model": "m", "input": "hi"}), ("responses", resp(store=True)),
                           ("chat", {"model": "m", "messages": []}), ("chat", chat(store=True))):
        verdict = check_request(endpoint, body)
        assert verdict.changed and verdict.doc["store"] is False
        assert {k: v for k, v in verdict.doc.items() if k != "store"} == {k: v for k, v in body.items() if k != "store"}
    assert "store" not in check_request("messages", msg(TEXT)).doc  # the Messages API has no such field


def test_previous_response_id_only_from_this_attempt() -> None:
    body = resp(previous_response_id="resp_mine")
    assert check_request("responses", body, response_ids={"resp_mine"}).doc == body
    with pytest.raises(PolicyRefusal, match="not a response this attempt received"):
        check_request("responses", body, response_ids={"resp_other"})


@pytest.mark.parametrize("family", sorted(PROVIDER_TOOLS))
def test_a_declared_provider_tool_passes_and_only_that_one(family: str) -> None:
    samples = {
        "web_search": [("messages", msg(TEXT, tools=[{"type": "web_search_20250305", "name": "web_search"}])),
                       ("messages", msg({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
                                        {"type": "web_search_tool_result", "tool_use_id": "s", "content": []})),
                       ("responses", resp({"type": "web_search_call", "id": "ws", "status": "completed"},
                                          tools=[{"type": "web_search"}], include=["web_search_call.action.sources"])),
                       ("chat", chat(web_search_options={}))],
        "web_fetch": [("messages", msg(TEXT, tools=[{"type": "web_fetch_20250910", "name": "web_fetch"}]))],
        "code_execution": [("messages", msg(TEXT, tools=[{"type": "code_execution_20250825", "name": "c"}])),
                           ("responses", resp(tools=[{"type": "code_interpreter", "container": {"type": "auto"}}]))],
        "file_search": [("responses", resp(tools=[{"type": "file_search", "vector_store_ids": ["v"]}]))],
        "image_generation": [("responses", resp(tools=[{"type": "image_generation"}]))],
    }[family]
    for endpoint, body in samples:
        with pytest.raises(PolicyRefusal):
            check_request(endpoint, body)
        assert check_request(endpoint, body, provider_tools=[family]).doc == body
        others = [f for f in PROVIDER_TOOLS if f != family]
        with pytest.raises(PolicyRefusal):
            check_request(endpoint, body, provider_tools=others)
    # Connectors, containers and foreign state stay refused whatever tool is allowed.
    for endpoint, body, _cause in (REFUSED["anthropic mcp_servers"], REFUSED["responses background"],
                                   REFUSED["anthropic container"], REFUSED["responses conversation"]):
        with pytest.raises(PolicyRefusal):
            check_request(endpoint, body, provider_tools=list(PROVIDER_TOOLS))


def test_unknown_provider_tool_names_are_a_config_error() -> None:
    base = {"attempt_id": "a", "hosts": ["h"], "providers": {"openai": {"base_url": "http://u", "models": ["m"]}}}
    assert GatewayConfig.model_validate(dict(base, provider_tools=["web_search"])).provider_tools == ("web_search",)
    with pytest.raises(ValueError, match="unknown provider tool"):
        GatewayConfig.model_validate(dict(base, provider_tools=["teleport"]))


def codex_requests() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CODEX_RECORD.read_text().splitlines()]


def test_codex_0_163_requests_pass_unchanged_with_web_search_off() -> None:
    """Recorded from the real codex 0.163 binary (PyPI openai-codex-cli-bin==0.163.0) against the fake
    provider with the harness's config (`web_search = "disabled"`): a first request and one that
    carries a function call and its output."""
    records = [r for r in codex_requests() if r["config"] == 'web_search = "disabled"']
    assert len(records) == 2
    assert any(item.get("type") == "function_call_output" for item in records[1]["body"]["input"])
    for record in records:
        body = record["body"]
        verdict = check_request("responses", copy.deepcopy(body))
        assert not verdict.changed and verdict.doc == body


def test_codex_default_config_offers_web_search_and_is_refused() -> None:
    records = [r for r in codex_requests() if r["config"] == "(default)"]
    assert records and all({"type": "web_search"} in [{"type": t["type"]} for t in r["body"]["tools"]]
                           for r in records)
    with pytest.raises(PolicyRefusal, match="'web_search'") as info:
        check_request("responses", records[0]["body"])
    assert info.value.cause == "provider_tool"


def test_response_ids_are_read_from_bodies_and_streams() -> None:
    reader = UsageReader("openai", streaming=True)
    created = {"type": "response.created", "response": {"id": "resp_s1", "object": "response", "model": "m"}}
    for event in (created, {"type": "response.output_text.delta", "delta": "x"}):
        reader.feed(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    assert reader.finish().response_id == "resp_s1"
    plain = UsageReader("openai", streaming=False)
    plain.feed(json.dumps({"id": "resp_p1", "object": "response", "model": "m", "usage": None}).encode())
    assert plain.finish().response_id == "resp_p1"
    chat_reader = UsageReader("openai", streaming=False)
    chat_reader.feed(json.dumps({"id": "chatcmpl-1", "object": "chat.completion"}).encode())
    assert chat_reader.finish().response_id is None
