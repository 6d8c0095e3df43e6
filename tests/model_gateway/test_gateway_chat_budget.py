"""Open-weight models through Chat Completions are metered and budgeted like hosted ones (issue 31,
item 5): the gateway and the fake provider as real processes on loopback, the fake standing for a
keyless local server (vLLM, llama.cpp, Ollama) serving a model that is in no price table.

A Chat Completions stream reports usage only when the request asks for it, so the gateway makes
every streamed chat request ask (`stream_options.include_usage: true`); otherwise an agent could
stream without it and use the model unmetered, past any token budget.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from model_gateway.local import LocalProcess, start_fake_provider, start_gateway
from model_gateway.policy import PolicyRefusal, check_request

HOST = "model-gateway:8080"
VKEY = "pbv-" + "v" * 40
MODEL = "qwen2.5-coder-7b-instruct"
USAGE = {"input_tokens": 900, "output_tokens": 100}
USER = [{"role": "user", "content": "hi"}]


class Local:
    def __init__(self, fake: LocalProcess, gateway: LocalProcess) -> None:
        self.fake, self.gateway = fake, gateway
        self.http = httpx.Client(timeout=30, trust_env=False)

    def chat(self, body: dict[str, Any]) -> httpx.Response:
        return self.http.post(self.gateway.ready["proxy"] + "/v1/chat/completions", json={"model": MODEL, **body},
                              headers={"host": HOST, "authorization": f"Bearer {VKEY}"})

    def usage_log(self) -> list[dict[str, Any]]:
        return self.http.get(self.gateway.ready["control"] + "/control/usage-log",
                             headers={"authorization": f"Bearer {self.gateway.control_token}"}).json()["items"]

    def received(self) -> list[dict[str, Any]]:
        return self.http.get(self.fake.ready["url"] + "/_fake/requests").json()["items"]


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    (tmp_path / "fake").mkdir()
    (tmp_path / "gw").mkdir()
    script = {"match": "any", "steps": [], "otherwise": {"content": [{"type": "text", "text": "ok"}], "usage": USAGE}}
    fake = start_fake_provider(script, workdir=tmp_path / "fake")  # keyless, like most local servers
    try:
        config = {"attempt_id": "t", "hosts": [HOST], "budget": {"max_tokens": 2500},
                  "providers": {"openai": {"base_url": fake.ready["url"], "models": [MODEL]}}}
        gateway = start_gateway(config, {"upstream_keys": {}, "virtual_keys": [VKEY]}, workdir=tmp_path / "gw")
    except BaseException:
        fake.stop()
        raise
    yield Local(fake, gateway)
    gateway.stop()
    fake.stop()


def test_chat_streams_without_usage_asked_are_metered_and_budgeted(local: Local) -> None:
    # 1: a stream that does not ask for usage: the gateway asks for it, the client sees it too.
    r = local.chat({"stream": True, "messages": USER})
    assert r.status_code == 200 and r.text.rstrip().endswith("data: [DONE]")
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
    assert events[-1]["usage"]["prompt_tokens"] == 900
    # 2: a stream that asks *not* to report usage, other stream options kept.
    r = local.chat({"stream": True, "stream_options": {"include_usage": False, "include_obfuscation": False},
                    "messages": USER})
    assert r.status_code == 200
    # 3: not streamed; after it 3000 tokens of 2500 are used, so the next call is refused.
    assert local.chat({"messages": USER}).status_code == 200
    r = local.chat({"stream": True, "messages": USER})
    assert r.status_code == 429 and r.json()["error"]["code"] == "insufficient_quota"

    got = local.received()
    assert [g["body"].get("stream_options") for g in got] == [
        {"include_usage": True}, {"include_usage": True, "include_obfuscation": False}, None]
    assert all("authorization" not in g["headers"] for g in got)  # keyless upstream: no key sent
    rows = local.usage_log()
    assert [(x["endpoint"], x["stream"], x["status"]) for x in rows] == [
        ("chat", True, "ok"), ("chat", True, "ok"), ("chat", False, "ok"), ("chat", True, "budget_exhausted")]
    # Call for call, the usage log holds what the upstream reported; the model is unpriced.
    for row, item in zip(rows[:3], got, strict=True):
        assert row["reported"] is True
        assert (row["input_tokens"], row["output_tokens"]) == (item["usage"]["input_tokens"], item["usage"]["output_tokens"])
        assert row["cost_usd"] is None


def test_a_stream_flag_that_is_not_a_boolean_is_refused_before_the_upstream(local: Local) -> None:
    """A lenient server reads "true" as a stream, which the gateway would not meter as one."""
    for flag in ("true", 1):
        r = local.chat({"stream": flag, "messages": USER})
        assert r.status_code == 400 and "stream must be true or false" in r.json()["error"]["message"]
    assert local.chat({"stream": False, "messages": USER}).status_code == 200  # positive control
    assert len(local.received()) == 1
    assert [x["cause"] for x in local.usage_log()] == ["shape", "shape", None]


@pytest.mark.parametrize(("body", "forwarded"), [
    ({"stream": True}, {"stream": True, "stream_options": {"include_usage": True}}),
    ({"stream": True, "stream_options": None}, {"stream": True, "stream_options": {"include_usage": True}}),
    ({"stream": True, "stream_options": {"include_usage": True}}, {"stream": True, "stream_options": {"include_usage": True}}),
    ({"stream": True, "stream_options": {"include_usage": 0}}, {"stream": True, "stream_options": {"include_usage": True}}),
    ({"stream": False}, {"stream": False}),
    ({"stream": None}, {"stream": None}),  # null is the API's default (no stream) everywhere
    ({}, {}),
])
def test_chat_policy_asks_every_stream_for_its_usage(body: dict[str, Any], forwarded: dict[str, Any]) -> None:
    doc = {"model": MODEL, "messages": USER, **body}
    verdict = check_request("chat", doc)
    assert verdict.doc == {"model": MODEL, "messages": USER, **forwarded, "store": False}
    assert verdict.changed


@pytest.mark.parametrize(("endpoint", "body"), [
    ("chat", {"stream": "true"}), ("chat", {"stream": 1}), ("chat", {"stream": 0}),
    ("responses", {"stream": "yes"}), ("messages", {"stream": "true"}),
    ("chat", {"stream": True, "stream_options": "include_usage"}),
    ("chat", {"stream": True, "stream_options": ["include_usage"]}),
])
def test_malformed_stream_fields_are_refused(endpoint: str, body: dict[str, Any]) -> None:
    doc = {"model": MODEL, **({"input": "hi"} if endpoint == "responses" else {"messages": USER}), **body}
    if endpoint == "messages":
        doc["max_tokens"] = 16
    with pytest.raises(PolicyRefusal) as info:
        check_request(endpoint, doc)
    assert info.value.cause == "shape"


def test_responses_and_messages_streams_are_not_rewritten() -> None:
    """Both report usage in every stream already (response.completed; message_start/_delta)."""
    doc = {"model": MODEL, "input": "hi", "stream": True, "store": False}
    assert check_request("responses", doc).changed is False
    doc = {"model": MODEL, "max_tokens": 16, "messages": USER, "stream": True}
    assert check_request("messages", doc).changed is False


def test_answered_calls_without_usage_are_counted_as_unmetered() -> None:
    """An upstream that reports no usage (some local servers) leaves calls outside the budget:
    the turn's and the attempt's figures say how many; metered and refused calls are not counted."""
    from orchestrator.attempt.model_usage import attempt_usage, turn_usage

    def row(status: str, reported: bool, endpoint: str = "chat", turn: int = 1) -> dict[str, Any]:
        return {"status": status, "reported": reported, "endpoint": endpoint, "turn": turn, "input_tokens": 10 * reported,
                "output_tokens": 0, "cost_usd": None}

    rows = [row("ok", False), row("ok", True), row("ok", False, "count_tokens"), row("upstream_status", False),
            row("refused", False), row("ok", False, turn=2)]
    assert turn_usage(rows, 1)["unmetered_requests"] == 1
    assert attempt_usage(rows)["unmetered_requests"] == 2
    assert "unmetered_requests" not in turn_usage([row("ok", True)], 1)  # absent when none
