"""The model gateway against the fake provider, both real processes on loopback.

Forwarding (the three APIs, streamed and not), the key swap, metering, refusals (each beside
a request that passes), budgets, upstream outages and the control API.
"""
from __future__ import annotations

import json
import secrets
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from model_gateway.local import LocalProcess, start_fake_provider, start_gateway

HOST = "model-gateway:8080"
REAL_KEY = "sk-real-" + "r" * 32
VKEY = "pbv-" + "v" * 40
OTHER_VKEY = "pbv-" + "o" * 40

TOOL_STEP = {"content": [{"type": "text", "text": "Checking."},
                         {"type": "tool_use", "name": "Bash", "input": {"command": "erp whoami"}}],
             "usage": {"input_tokens": 1200, "output_tokens": 40, "cache_read_tokens": 300, "cache_write_tokens": 50}}
TEXT_STEP = {"content": [{"type": "text", "text": "All done."}], "usage": {"input_tokens": 1500, "output_tokens": 12}}


def script(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"match": "any", "require_key": REAL_KEY, "steps": list(steps), **extra}


def gateway_config(upstream: str, **extra: Any) -> dict[str, Any]:
    return {"attempt_id": "test-attempt", "hosts": [HOST, "model-gateway"],
            "providers": {"anthropic": {"base_url": upstream, "models": ["fake-claude"]},
                          "openai": {"base_url": upstream, "models": ["fake-gpt"]}},
            **extra}


KEYS = {"upstream_keys": {"anthropic": REAL_KEY, "openai": REAL_KEY}, "virtual_keys": [VKEY]}


class Pair:
    """A fake provider and a gateway in front of it."""

    def __init__(self, fake: LocalProcess, gateway: LocalProcess) -> None:
        self.fake = fake
        self.gateway = gateway
        self.url = gateway.ready["proxy"]
        self.control_url = gateway.ready["control"]
        self.http = httpx.Client(timeout=30, trust_env=False)

    def post(self, path: str, body: dict[str, Any], *, key: str | None = VKEY, host: str = HOST,
             headers: dict[str, str] | None = None) -> httpx.Response:
        h = {"host": host, "anthropic-version": "2023-06-01", **(headers or {})}
        if key is not None:
            h["x-api-key" if "messages" in path else "authorization"] = key if "messages" in path else f"Bearer {key}"
        return self.http.post(self.url + path, json=body, headers=h)

    def control(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, self.control_url + path,
                                 headers={"authorization": f"Bearer {self.gateway.control_token}"}, **kw)

    def usage_log(self) -> list[dict[str, Any]]:
        return self.control("GET", "/control/usage-log").json()["items"]

    def received(self) -> list[dict[str, Any]]:
        return self.http.get(self.fake.ready["url"] + "/_fake/requests").json()["items"]


@pytest.fixture
def make_pair(tmp_path: Path) -> Iterator[Any]:
    started: list[LocalProcess] = []

    def make(steps: list[dict[str, Any]], *, upstream: str | None = None, fake_extra: dict[str, Any] | None = None,
             **config_extra: Any) -> Pair:
        n = len(started)
        fake_dir, gw_dir = tmp_path / f"fake{n}", tmp_path / f"gw{n}"
        fake_dir.mkdir()
        gw_dir.mkdir()
        fake = start_fake_provider(script(*steps, **(fake_extra or {})), workdir=fake_dir)
        started.append(fake)
        gateway = start_gateway(gateway_config(upstream or fake.ready["url"], **config_extra), KEYS, workdir=gw_dir)
        started.append(gateway)
        return Pair(fake, gateway)

    yield make
    for proc in started:
        proc.stop()


def messages_body(stream: bool = False, model: str = "fake-claude") -> dict[str, Any]:
    return {"model": model, "max_tokens": 100, "stream": stream, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]}


def test_anthropic_forwarded_with_key_swap_headers_and_metering(make_pair: Any) -> None:
    pair = make_pair([TOOL_STEP])
    beta = "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
    resp = pair.http.post(pair.url + "/v1/messages?beta=true", json=messages_body(),
                          headers={"host": HOST, "x-api-key": VKEY, "anthropic-version": "2023-06-01",
                                   "anthropic-beta": beta, "x-app": "cli"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["content"][1]["input"] == {"command": "erp whoami"}
    (got,) = pair.received()
    assert got["query"] == "beta=true"
    assert got["headers"]["x-api-key"] == REAL_KEY  # the virtual key was swapped for the real one
    assert VKEY not in json.dumps(got)
    assert got["headers"]["anthropic-version"] == "2023-06-01"
    assert got["headers"]["anthropic-beta"] == beta
    assert got["headers"]["x-app"] == "cli"
    (row,) = pair.usage_log()
    assert (row["status"], row["provider"], row["endpoint"], row["model"]) == ("ok", "anthropic", "messages", "fake-claude")
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"], row["cache_write_tokens"]) == (1200, 40, 300, 50)
    # fake-claude: $1 in, $10 out, $0.1 cache read, $2 cache write per million
    assert row["cost_usd"] == pytest.approx((1200 * 1 + 40 * 10 + 300 * 0.1 + 50 * 2) / 1e6)
    assert row["price_version"] == "2026-12-01"


def test_anthropic_stream_passes_through_as_it_arrives(make_pair: Any) -> None:
    slow = dict(TOOL_STEP, chunk_delay_s=0.25)  # 9 events: about 2 s from first to last
    pair = make_pair([slow])
    arrivals: list[float] = []
    data = b""
    start = time.monotonic()
    with pair.http.stream("POST", pair.url + "/v1/messages", json=messages_body(stream=True),
                          headers={"host": HOST, "x-api-key": VKEY}) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        for chunk in resp.iter_raw():
            arrivals.append(time.monotonic() - start)
            data += chunk
    # Relative times only (an absolute bound failed under load): a buffered answer arrives in one
    # piece at the end; a streamed one starts while the fake is still producing (~2 s of events).
    assert len(arrivals) >= 5, "the answer arrived in one piece: it was buffered"
    assert arrivals[-1] - arrivals[0] > 1.5, "the first event did not come long before the last"
    events = [json.loads(line[5:]) for line in data.decode().splitlines() if line.startswith("data:")]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    (row,) = pair.usage_log()
    assert row["stream"] is True and row["ttfb_s"] < row["latency_s"] - 1.5  # metered at the first byte, not the end
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]) == (1200, 40, 300)


def test_openai_responses_and_chat_streams_metered(make_pair: Any) -> None:
    pair = make_pair([TOOL_STEP, TEXT_STEP, TEXT_STEP])
    auth = {"host": HOST, "authorization": f"Bearer {VKEY}"}
    with pair.http.stream("POST", pair.url + "/v1/responses", headers=auth,
                          json={"model": "fake-gpt", "stream": True, "input": "hi"}) as resp:
        body = resp.read().decode()
    assert resp.status_code == 200 and "response.completed" in body and '"function_call"' in body
    r = pair.http.post(pair.url + "/v1/chat/completions", headers=auth,
                       json={"model": "fake-gpt", "stream": True, "stream_options": {"include_usage": True},
                             "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200 and r.text.rstrip().endswith("data: [DONE]")
    r = pair.http.post(pair.url + "/v1/chat/completions", headers=auth,
                       json={"model": "fake-gpt", "messages": [{"role": "user", "content": "hi"}]})
    assert r.json()["choices"][0]["message"]["content"] == "All done."
    assert [g["headers"]["authorization"] for g in pair.received()] == [f"Bearer {REAL_KEY}"] * 3
    rows = pair.usage_log()
    assert [(x["endpoint"], x["stream"], x["status"]) for x in rows] == [
        ("responses", True, "ok"), ("chat", True, "ok"), ("chat", False, "ok")]
    # OpenAI reports cached tokens inside input tokens: 1200 fresh + 300 cached = 1500 in
    assert (rows[0]["input_tokens"], rows[0]["cache_read_tokens"], rows[0]["output_tokens"]) == (1500, 300, 40)
    assert rows[0]["cost_usd"] == pytest.approx((1200 * 1 + 300 * 0.1 + 40 * 10) / 1e6)
    assert (rows[1]["input_tokens"], rows[1]["output_tokens"]) == (1500, 12)
    assert (rows[2]["input_tokens"], rows[2]["output_tokens"]) == (1500, 12)


def test_count_tokens_forwarded_not_billed(make_pair: Any) -> None:
    pair = make_pair([])
    r = pair.post("/v1/messages/count_tokens", {"model": "fake-claude", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 200 and r.json()["input_tokens"] >= 1
    (row,) = pair.usage_log()
    assert row["endpoint"] == "count_tokens" and row["status"] == "ok" and row["cost_usd"] is None


def _raw(url: str, request: bytes) -> bytes:
    """Send raw request bytes (head ends with a blank line) with `Connection: close`; the whole answer."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    head, sep, body = request.partition(b"\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head + b"\r\nConnection: close" + sep + body)
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    return data


def test_refusals_each_beside_a_request_that_passes(make_pair: Any) -> None:
    pair = make_pair([TEXT_STEP] * 3)
    good = pair.post("/v1/messages", messages_body())
    assert good.status_code == 200, good.text  # positive control
    sent = len(pair.received())
    fake_hostport = pair.fake.ready["url"].removeprefix("http://")

    cases = {
        "other host": pair.post("/v1/messages", messages_body(), host=fake_hostport),
        "public host": pair.post("/v1/messages", messages_body(), host="api.anthropic.com"),
        "unknown path": pair.post("/v1/complete", messages_body()),
        "models list": pair.http.get(pair.url + "/v1/models", headers={"host": HOST, "x-api-key": VKEY}),
        "no key": pair.post("/v1/messages", messages_body(), key=None),
        "another attempt's key": pair.post("/v1/messages", messages_body(), key=OTHER_VKEY),
        "the real key": pair.post("/v1/messages", messages_body(), key=REAL_KEY),
        "undeclared model": pair.post("/v1/messages", messages_body(model="claude-opus-4-1")),
    }
    expected = {"other host": 421, "public host": 421, "unknown path": 404, "models list": 404, "no key": 401,
                "another attempt's key": 401, "the real key": 401, "undeclared model": 400}
    assert {k: r.status_code for k, r in cases.items()} == expected
    for name, r in cases.items():
        assert r.json()["type"] == "error" and r.json()["error"]["message"], name  # Anthropic's error shape
    assert "not declared" in cases["undeclared model"].json()["error"]["message"]

    absolute = _raw(pair.url, f"POST {pair.fake.ready['url']}/v1/messages HTTP/1.1\r\nHost: {HOST}\r\n"
                              f"x-api-key: {VKEY}\r\ncontent-length: 2\r\n\r\n{{}}".encode())
    assert absolute.startswith(b"HTTP/1.1 400"), absolute[:200]
    assert b"absolute-form" in absolute
    connect = _raw(pair.url, f"CONNECT {fake_hostport} HTTP/1.1\r\nHost: {fake_hostport}\r\n\r\n".encode())
    assert connect.startswith(b"HTTP/1.1 405"), connect[:200]

    assert len(pair.received()) == sent, "a refused request reached the provider"
    again = pair.post("/v1/messages", messages_body())
    assert again.status_code == 200  # and the gateway still serves good requests
    own = pair.post("/v1/messages", messages_body(), host=pair.url.removeprefix("http://"))
    assert own.status_code == 200  # its own address is answered like its name
    refused = [r for r in pair.usage_log() if r["status"] == "refused"]
    assert len(refused) == len(cases) + 2  # and the two raw requests


def test_revoked_key_expires_at_once(make_pair: Any) -> None:
    pair = make_pair([TEXT_STEP])
    assert pair.post("/v1/messages", messages_body()).status_code == 200
    assert pair.control("POST", "/control/revoke").json()["revoked"] is True
    r = pair.post("/v1/messages", messages_body())
    assert r.status_code == 401 and "expired" in r.json()["error"]["message"]
    assert len(pair.received()) == 1


def test_client_network_restriction(make_pair: Any) -> None:
    pair = make_pair([TEXT_STEP], clients=["10.213.0.0/24"])  # loopback is not the attempt network
    r = pair.post("/v1/messages", messages_body())
    assert r.status_code == 403 and pair.received() == []
    open_pair = make_pair([TEXT_STEP], clients=["127.0.0.0/8"])
    assert open_pair.post("/v1/messages", messages_body()).status_code == 200


def test_token_budget_answers_as_the_provider(make_pair: Any) -> None:
    pair = make_pair([TOOL_STEP, TOOL_STEP, TOOL_STEP], budget={"max_tokens": 1000})
    first = pair.post("/v1/messages", messages_body())
    assert first.status_code == 200  # under the cap when it started; 1590 tokens used now
    second = pair.post("/v1/messages", messages_body())
    assert second.status_code == 400
    assert second.json()["error"]["type"] == "invalid_request_error"
    assert "token budget" in second.json()["error"]["message"]
    oai = pair.post("/v1/responses", {"model": "fake-gpt", "input": "hi"})
    assert oai.status_code == 429 and oai.json()["error"]["code"] == "insufficient_quota"
    assert [r["status"] for r in pair.usage_log()] == ["ok", "budget_exhausted", "budget_exhausted"]
    assert len(pair.received()) == 1


def test_cost_budget(make_pair: Any) -> None:
    pair = make_pair([TOOL_STEP] * 3, budget={"max_cost_usd": 0.002})  # one call costs $0.00173
    assert pair.post("/v1/messages", messages_body()).status_code == 200
    assert pair.post("/v1/messages", messages_body()).status_code == 200
    third = pair.post("/v1/messages", messages_body())
    assert third.status_code == 400 and "cost budget" in third.json()["error"]["message"]


def test_upstream_down_and_failing(make_pair: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once closed
    down = make_pair([], upstream=closed)
    r = down.post("/v1/messages", messages_body())
    assert r.status_code == 502 and r.json()["error"]["type"] == "api_error"
    (row,) = down.usage_log()
    assert row["status"] == "upstream_error" and "unreachable" in row["detail"]
    failing = make_pair([{"fail": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}}])
    r = failing.post("/v1/messages", messages_body())
    assert r.status_code == 529 and r.json()["error"]["type"] == "overloaded_error"  # passed through
    (row,) = failing.usage_log()
    assert row["status"] == "upstream_status" and row["http_status"] == 529


def test_control_api_turn_marks_and_token(make_pair: Any) -> None:
    pair = make_pair([TEXT_STEP, TEXT_STEP])
    assert pair.http.get(pair.control_url + "/control/usage-log").status_code == 401
    assert pair.http.get(pair.control_url + "/control/usage-log",
                         headers={"authorization": f"Bearer {VKEY}"}).status_code == 401
    # the control API is not on the proxy listener, and the proxy's paths are not on the control one
    assert pair.http.get(pair.url + "/control/usage-log", headers={"host": HOST}).status_code == 404
    pair.control("POST", "/control/turn", json={"turn": 1})
    pair.post("/v1/messages", messages_body())
    pair.control("POST", "/control/turn", json={"turn": 2})
    pair.post("/v1/messages", messages_body())
    rows = pair.usage_log()
    assert [(r["turn"], r["status"]) for r in rows] == [(None, "refused"), (1, "ok"), (2, "ok")]
    assert pair.control("GET", "/control/usage-log", params={"after": 2}).json()["items"][0]["seq"] == 3
    usage = pair.control("GET", "/control/usage").json()
    assert usage["requests"] == 2 and usage["tokens"] == 2 * (1500 + 12)
    assert pair.control("GET", "/control/health").json()["attempt_id"] == "test-attempt"


def test_keys_never_logged(make_pair: Any) -> None:
    pair = make_pair([TEXT_STEP])
    pair.post("/v1/messages", messages_body())
    pair.post("/v1/messages", messages_body(), key=OTHER_VKEY)
    pair.control("POST", "/control/revoke")
    pair.post("/v1/messages", messages_body())
    text = pair.gateway.files["usage_log"].read_text() + json.dumps(pair.usage_log()) + pair.gateway.output()
    for key in (REAL_KEY, VKEY, OTHER_VKEY):
        assert key not in text


def test_bad_config_refused_with_a_clear_error(tmp_path: Path) -> None:
    cfg = gateway_config("ftp://x")
    with pytest.raises(RuntimeError, match="providers.anthropic.base_url"):
        start_gateway(cfg, KEYS, workdir=tmp_path)
    with pytest.raises(RuntimeError, match="virtual_keys") as info:
        start_gateway(gateway_config("http://127.0.0.1:9"), {"virtual_keys": ["short-" + secrets.token_hex(2)]},
                      workdir=tmp_path)
    assert "short-" not in str(info.value)  # a key is never echoed


def test_a_body_parsers_could_read_two_ways_is_refused(make_pair: Any) -> None:
    """Unchanged bodies go out byte for byte, so the provider must read what the policy read: a
    key given twice (the policy would see the last value, a provider may keep the first) and
    NaN/Infinity are refused, each beside the same request written once."""
    pair = make_pair([TEXT_STEP] * 2)
    headers = {"host": HOST, "x-api-key": VKEY, "content-type": "application/json"}
    base = messages_body()
    good = pair.http.post(pair.url + "/v1/messages", content=json.dumps(base).encode(), headers=headers)
    assert good.status_code == 200, good.text  # positive control
    sent = len(pair.received())
    web = '[{"type": "web_search_20250305", "name": "web_search"}]'
    smuggled = {
        "tools twice": '{"model": "fake-claude", "max_tokens": 100, "tools": ' + web
                       + ', "messages": [{"role": "user", "content": "hi"}], "tools": []}',
        "nested key twice": '{"model": "fake-claude", "max_tokens": 100, "messages": [{"role": "user", '
                            '"content": [{"type": "text", "text": "a", "type": "document"}]}]}',
        "NaN": '{"model": "fake-claude", "max_tokens": 100, "temperature": NaN, '
               '"messages": [{"role": "user", "content": "hi"}]}',
    }
    for name, raw in smuggled.items():
        r = pair.http.post(pair.url + "/v1/messages", content=raw.encode(), headers=headers)
        assert r.status_code == 400, (name, r.text)
        assert r.json()["type"] == "error" and "refused by the model gateway" in r.json()["error"]["message"], name
    assert len(pair.received()) == sent, "an ambiguous body reached the provider"
    causes = [row.get("cause") for row in pair.usage_log() if row["status"] == "refused"]
    assert causes == ["ambiguous_json"] * len(smuggled)
    again = pair.http.post(pair.url + "/v1/messages", content=json.dumps(base).encode(), headers=headers)
    assert again.status_code == 200, again.text
