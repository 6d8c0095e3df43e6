"""The escape suite, provider part (issue 30): a scripted agent inside a live docker attempt asks
the provider, through the model gateway, to act or fetch outside the attempt — server and hosted
tools, remote MCP connectors, containers, stored files and URLs, background mode, conversations,
another attempt's response — each beside a positive control of the same API that passes.

Two attempts, each with the project's fake provider as a real upstream on its egress network
(orchestrator/services/gateway.py): A as every campaign runs (no provider tool), B with
`provider_tools: [web_search]`. The fake's record shows what arrived; the agent's report shows
the refusals it could read; the gateway's usage log carries each refusal with its cause.
"""
from __future__ import annotations

import json
import secrets
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from escape_support import EscapeLab, escape_scenario

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

PROBE_TARGET = "/opt/ptprobe/probe.py"
PYTHON = "/opt/venv/bin/python"
CLAUDE, GPT = "fake-claude", "fake-gpt"

# Runs as the agent: POSTs each request to the gateway, keeps status, body and any response id;
# `previous_from` chains a request to the id an earlier one got back.
PROBE = textwrap.dedent('''
    import json, os, re, sys, urllib.request, urllib.error
    spec = json.load(open(sys.argv[1]))
    base, key = spec["base"], os.environ["ANTHROPIC_API_KEY"]
    out, ids = {}, {}
    for r in spec["requests"]:
        body = dict(r["body"])
        if r.get("previous_from"):
            body["previous_response_id"] = ids.get(r["previous_from"], "none")
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
        headers.update({"x-api-key": key} if "messages" in r["path"] else {"authorization": "Bearer " + key})
        req = urllib.request.Request(base + r["path"], data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, text = resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode("utf-8", "replace")
        found = re.search(r'"id": ?"(resp_[A-Za-z0-9]+)"', text)
        if found:
            ids[r["name"]] = found.group(1)
        out[r["name"]] = {"status": status, "body": text[:2000], "response_id": ids.get(r["name"])}
    json.dump(out, open(sys.argv[2], "w"))
''')

USER = [{"role": "user", "content": "hi"}]
CUSTOM = {"name": "Bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}
FUNCTION = {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}}


def msgs(**extra: Any) -> dict[str, Any]:
    return {"model": CLAUDE, "max_tokens": 16, "messages": USER, "tools": [CUSTOM], **extra}


def resp(**extra: Any) -> dict[str, Any]:
    return {"model": GPT, "input": [{"role": "user", "content": "hi"}], "tools": [FUNCTION], **extra}


def chat(**extra: Any) -> dict[str, Any]:
    return {"model": GPT, "messages": USER, **extra}


def req(name: str, path: str, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"name": name, "path": path, "body": body, **kw}


M, CT, R, C = "/v1/messages", "/v1/messages/count_tokens", "/v1/responses", "/v1/chat/completions"
WEB_SEARCH_A = {"type": "web_search_20250305", "name": "web_search"}
# Attempt A: (request, expected status, expected usage-log cause of a refusal).
A_REQUESTS: list[tuple[dict[str, Any], int, str | None]] = [
    (req("messages: custom tool (control)", M, msgs()), 200, None),
    (req("messages: web_search", M, msgs(tools=[CUSTOM, WEB_SEARCH_A])), 400, "provider_tool"),
    (req("messages: web_fetch", M, msgs(tools=[{"type": "web_fetch_20250910", "name": "web_fetch"}])), 400,
     "provider_tool"),
    (req("messages: code_execution", M, msgs(tools=[{"type": "code_execution_20250825", "name": "code_execution"}])),
     400, "provider_tool"),
    (req("messages: mcp_servers", M, msgs(mcp_servers=[{"type": "url", "url": "https://mcp.example.com/sse",
                                                        "name": "outside"}])), 400, "connector"),
    (req("messages: container", M, msgs(container="container_011")), 400, "container"),
    (req("messages: image by url", M, msgs(messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}])), 400, "file_reference"),
    (req("messages: stored file", M, msgs(messages=[{"role": "user", "content": [
        {"type": "document", "source": {"type": "file", "file_id": "file_011"}}]}])), 400, "file_reference"),
    (req("messages: unknown field", M, msgs(teleport=True)), 400, "field"),
    (req("count_tokens (control)", CT, {"model": CLAUDE, "messages": USER, "tools": [CUSTOM]}), 200, None),
    (req("count_tokens: web_search", CT, {"model": CLAUDE, "messages": USER, "tools": [WEB_SEARCH_A]}), 400,
     "provider_tool"),
    (req("responses: function tool, streamed (control)", R, resp(stream=True)), 200, None),
    (req("responses: function tool (control)", R, resp()), 200, None),
    (req("responses: previous_response_id of this attempt (control)", R, resp(),
         previous_from="responses: function tool, streamed (control)"), 200, None),
    (req("responses: web_search", R, resp(tools=[FUNCTION, {"type": "web_search"}])), 400, "provider_tool"),
    (req("responses: file_search", R, resp(tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}])), 400,
     "provider_tool"),
    (req("responses: code_interpreter", R, resp(tools=[{"type": "code_interpreter", "container": {"type": "auto"}}])),
     400, "provider_tool"),
    (req("responses: image_generation", R, resp(tools=[{"type": "image_generation"}])), 400, "provider_tool"),
    (req("responses: remote mcp", R, resp(tools=[{"type": "mcp", "server_label": "outside",
                                                  "server_url": "https://mcp.example.com/mcp"}])), 400, "provider_tool"),
    (req("responses: background", R, resp(background=True)), 400, "background"),
    (req("responses: conversation", R, resp(conversation="conv_011")), 400, "server_state"),
    (req("responses: stored file", R, resp(input=[{"role": "user", "content": [
        {"type": "input_file", "file_id": "file_011"}]}])), 400, "file_reference"),
    (req("chat (control)", C, chat()), 200, None),
    (req("chat: web_search_options", C, chat(web_search_options={})), 400, "provider_tool"),
    (req("chat: image by url", C, chat(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}])), 400, "file_reference"),
]


class ToolAttempt:
    """A live attempt with its fake provider (both APIs) and its gateway, optionally allowing tools."""

    def __init__(self, lab: EscapeLab, live: Any, gateway_image: str, provider_tools: tuple[str, ...] = ()) -> None:
        from orchestrator.attempt.model_run import pin_gateway_routes
        from orchestrator.model_access import parse_model_access
        from orchestrator.services.gateway import (
            CONTROL,
            FAKE_PROVIDER,
            GATEWAY,
            PROXY_PORT,
            GatewayLaunch,
            fake_provider_service,
            gateway_service,
        )

        self.live = live
        self.real_key = secrets.token_hex(32)
        self.control_token = secrets.token_hex(32)
        self.virtual_key = "pbv-" + secrets.token_urlsafe(32)
        script = {"match": "any", "require_key": self.real_key, "steps": [],
                  "otherwise": {"content": [{"type": "text", "text": "hello"}], "usage": {"input_tokens": 7, "output_tokens": 2}}}
        sandbox = live.sandbox
        fake = sandbox.start_service(replace(fake_provider_service(json.dumps(script).encode(), lab.config), image=gateway_image))
        sandbox.wait_service_healthy(FAKE_PROVIDER)
        self.fake_url = fake.url("url")
        self.access = parse_model_access({"providers": {"anthropic": {"base_url": self.fake_url, "models": [CLAUDE]},
                                                        "openai": {"base_url": self.fake_url, "models": [GPT]}},
                                          "provider_tools": list(provider_tools)}, "test")
        block = sandbox.blocks["attempt"]
        self.proxy_addr = f"{sandbox.addresses.get(GATEWAY, {}).get('attempt') or block.host(3)}:{PROXY_PORT}"
        self.launch = GatewayLaunch(attempt_id=live.name, access=self.access, virtual_key=self.virtual_key,
                                    control_token=self.control_token,
                                    upstream_keys={"anthropic": self.real_key, "openai": self.real_key},
                                    clients=(block.subnet,), extra_hosts=(self.proxy_addr,))
        endpoints = sandbox.start_service(replace(gateway_service(self.launch, lab.config), image=gateway_image))
        sandbox.wait_service_healthy(GATEWAY, error=RuntimeError)
        pin_gateway_routes(sandbox, [])
        self.control_url = endpoints.url(CONTROL)

    def usage_log(self) -> list[dict[str, Any]]:
        return httpx.get(self.control_url + "/control/usage-log", headers={"Authorization": f"Bearer {self.control_token}"},
                         timeout=10, trust_env=False).json()["items"]

    def received(self) -> list[dict[str, Any]]:
        return httpx.get(self.fake_url + "/_fake/requests", timeout=10, trust_env=False).json()["items"]

    def turn(self, lab: EscapeLab, requests: list[dict[str, Any]], probe_file: Path) -> dict[str, Any]:
        """One agent turn running the probe with `requests`; its report."""
        from agent_sandbox.systems import BUILTIN_SYSTEMS, SystemSpec
        from orchestrator.backends.base import Mount, TurnLaunch

        live = self.live
        live.turns += 1
        n = live.turns
        turn_dir = lab.config.container_paths.turn_dir
        system = SystemSpec(name="provider-probe", argv=(PYTHON, PROBE_TARGET, f"{turn_dir}/spec.json",
                                                         "{out_dir}/probe.json"))
        model = BUILTIN_SYSTEMS["claude-code"].model
        assert model is not None
        env = {"ERP_URL": live.endpoints.agent_url, "ERP_TOKEN": live.agent_token, "TURN_BUDGET_S": "240",
               **model.turn_env(f"http://{self.proxy_addr}", self.virtual_key, CLAUDE)}
        spec = {"base": f"http://{self.proxy_addr}", "requests": requests}
        files = {"prompt.txt": b"provider probe\n", "system.json": json.dumps(system.system_json({})).encode(),
                 "context.json": json.dumps({"turn": n, "date": "2026-01-05", "budget_s": 240}).encode(),
                 "spec.json": json.dumps(spec).encode()}
        run = live.sandbox.run_turn(TurnLaunch(
            n=n, files=files, env=env, budget_s=240, host_turn_dir=live.paths.turn_dir(n),
            log_path=live.paths.turn_log(n), mounts=(Mount(probe_file, PROBE_TARGET),)))
        report = live.paths.turn_dir(n) / "out" / "probe.json"
        assert run.exit_code == 0 and report.is_file(), f"probe turn failed: {run}\n{lab.turn_diagnostics(live)}"
        return json.loads(report.read_text())


@pytest.fixture(scope="module")
def plab(docker_client, images, tmp_path_factory):
    lab = EscapeLab(docker_client, images, escape_scenario("payment-run", 0), tmp_path_factory.mktemp("escape-pt"))
    try:
        lab.probe_file = tmp_path_factory.mktemp("ptprobe") / "probe.py"
        lab.probe_file.write_text(PROBE)
        lab.plain = ToolAttempt(lab, lab.open_attempt("A"), images.gateway.tag)
        lab.search = ToolAttempt(lab, lab.open_attempt("B"), images.gateway.tag, provider_tools=("web_search",))
        yield lab
    finally:
        problems = lab.close()
    assert not problems, problems


def readable_refusal(path: str, body: str) -> str:
    """The refusal's message, from the provider's own error shape (what the agent's CLI shows)."""
    doc = json.loads(body)
    if path.startswith("/v1/messages"):
        assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error", doc
    else:
        assert set(doc) == {"error"} and doc["error"]["type"] == "invalid_request_error", doc
    message = doc["error"]["message"]
    assert message.startswith("refused by the model gateway: ") and "refused" in message[30:], message
    return message


def test_requests_that_act_outside_the_attempt_never_reach_the_provider(plab) -> None:
    a, b = plab.plain, plab.search
    # B's agent gets a response id of its own first: the one A's agent will try to continue.
    b_report = b.turn(plab, [req("responses (control)", R, resp())], plab.probe_file)
    other_id = b_report["responses (control)"]["response_id"]
    assert b_report["responses (control)"]["status"] == 200 and other_id and other_id.startswith("resp_")
    requests = [r for r, _s, _c in A_REQUESTS]
    requests.append(req("responses: previous_response_id of another attempt", R, resp(previous_response_id=other_id)))
    expected = {r["name"]: status for r, status, _c in A_REQUESTS} | {
        "responses: previous_response_id of another attempt": 400}
    causes = {r["name"]: cause for r, _s, cause in A_REQUESTS if cause} | {
        "responses: previous_response_id of another attempt": "server_state"}
    report = a.turn(plab, requests, plab.probe_file)
    assert {k: v["status"] for k, v in report.items()} == expected, report
    paths = {r["name"]: r["path"] for r in requests}
    for name in causes:
        readable_refusal(paths[name], report[name]["body"])
    assert "previous_response_id" in report["responses: previous_response_id of another attempt"]["body"]
    assert "hello" in report["messages: custom tool (control)"]["body"]

    # The fake received exactly the controls, with nothing that acts outside, and store false.
    received = a.received()
    controls = [n for n, s in expected.items() if s == 200]
    assert len(received) == len(controls), [r["body"] for r in received]
    for item in received:
        body = item["body"]
        assert not {"mcp_servers", "container", "background", "conversation", "web_search_options"} & set(body)
        assert all(t.get("type") in (None, "function", "custom") for t in body.get("tools", [])), body["tools"]
        if item["path"] in (R, C):
            assert body["store"] is False
    chained = [r["body"] for r in received if r["body"].get("previous_response_id")]
    own_id = report["responses: function tool, streamed (control)"]["response_id"]
    assert [c["previous_response_id"] for c in chained] == [own_id] and own_id != other_id

    # Every refusal is a usage-log row with its cause; the controls are `ok` rows.
    rows = a.usage_log()
    refused = [(r["cause"], r["http_status"]) for r in rows if r["status"] == "refused"]
    assert sorted(refused) == sorted((c, 400) for c in causes.values())
    assert sum(r["status"] == "ok" for r in rows) == len(controls)


def test_a_declared_provider_tool_arrives_and_only_that_one(plab) -> None:
    b = plab.search
    assert b.launch.config_doc()["provider_tools"] == ["web_search"]  # the gateway of a labelled cell
    before = len(b.received())
    report = b.turn(plab, [
        req("messages: web_search", M, msgs(tools=[CUSTOM, WEB_SEARCH_A])),
        req("responses: web_search", R, resp(tools=[FUNCTION, {"type": "web_search"}])),
        req("chat: web_search_options", C, chat(web_search_options={})),
        req("messages: web_fetch", M, msgs(tools=[{"type": "web_fetch_20250910", "name": "web_fetch"}])),
        req("messages: mcp_servers", M, msgs(mcp_servers=[{"type": "url", "url": "https://mcp.example.com/sse",
                                                           "name": "outside"}])),
        req("responses: file_search", R, resp(tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}])),
    ], plab.probe_file)
    assert {k: v["status"] for k, v in report.items()} == {
        "messages: web_search": 200, "responses: web_search": 200, "chat: web_search_options": 200,
        "messages: web_fetch": 400, "messages: mcp_servers": 400, "responses: file_search": 400}, report
    arrived = b.received()[before:]
    assert len(arrived) == 3
    assert {"type": "web_search_20250305", "name": "web_search"} in arrived[0]["body"]["tools"]
    assert {"type": "web_search"} in arrived[1]["body"]["tools"]
    assert "web_search_options" in arrived[2]["body"]
