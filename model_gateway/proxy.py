"""The agent-facing side of the gateway: a plain ASGI app that checks, forwards and meters.

Every request goes through the same checks, in this order, before anything is sent upstream:
method (no CONNECT), request target (origin-form only), Host header, client address, path,
virtual key, model, the request policy (model_gateway.policy: nothing that makes the provider
act or fetch outside the attempt), budget. A refusal answers in the error shape of the provider the path
belongs to and is written to the usage log as `refused` (or `budget_exhausted`).

Forwarding strips the client's credentials and hop-by-hop headers, injects the real key, asks
for an uncompressed answer (so usage can be read from the bytes) and passes the answer's bytes
back as they arrive, SSE included.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from .admission import Admitted, limiter_for, send_admitted
from .config import ROUTES, GatewayConfig, GatewaySecrets
from .limiter_service import LimiterClient, LimiterUnavailable
from .metering import UsageLog, UsageReader, UsageRow, priced_row
from .policy import PolicyRefusal, check_request
from .prices import PriceTable
from .wait_clock import WaitClock

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY = 32 * 1024 * 1024
# GET: the caller's provider wait this turn (agent_sandbox.turn extends its budget by it).
WAIT_PATH = "/_gateway/provider-wait"
# Never forwarded: hop-by-hop headers, the client's credentials, its idea of the host and length.
DROP_REQUEST = frozenset({
    "host", "content-length", "connection", "keep-alive", "proxy-authorization", "proxy-authenticate",
    "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "authorization", "x-api-key",
    "accept-encoding", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "cookie",
})
DROP_RESPONSE = frozenset({
    "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade", "trailer",
    "proxy-authenticate", "set-cookie", "alt-svc", "server", "date",
})


@dataclass
class GatewayState:
    """What the two apps (proxy and control) share."""

    config: GatewayConfig
    secrets: GatewaySecrets
    prices: PriceTable
    usage_log: UsageLog
    revoked: bool = False
    client: httpx.AsyncClient | None = None
    networks: list[Any] = field(default_factory=list)
    own_hosts: set[str] = field(default_factory=set)  # the proxy's own HOST:PORT, always answered
    response_ids: set[str] = field(default_factory=set)  # Responses ids relayed to this attempt
    limiter: LimiterClient | None = None  # the provider limits (model_gateway.admission.limiter_for)
    wait_clock: WaitClock = field(init=False)

    def __post_init__(self) -> None:
        self.networks = self.config.client_networks()
        self.wait_clock = WaitClock(lambda: self.usage_log.turn)
        if self.limiter is None:
            self.limiter = limiter_for(self.config, self.secrets)

    def http(self) -> httpx.AsyncClient:
        """The upstream client (made on first use, inside the running event loop)."""
        if self.client is None:
            cfg = self.config
            # trust_env=False: no proxy or netrc from the environment can redirect the calls.
            self.client = httpx.AsyncClient(
                timeout=httpx.Timeout(cfg.upstream_timeout_s, connect=cfg.connect_timeout_s),
                trust_env=False, follow_redirects=False,
                limits=httpx.Limits(max_connections=32, max_keepalive_connections=8))
        return self.client


def error_body(provider: str | None, status: int, kind: str, message: str) -> dict[str, Any]:
    """An error in the shape the provider itself uses, so the agent CLI shows the message."""
    if provider == "openai":
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    return {"type": "error", "error": {"type": kind, "message": message}}


class Refusal(Exception):
    """A request the gateway answers itself."""

    def __init__(self, status: int, kind: str, message: str, *, log_status: str = "refused",
                 cause: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.log_status = log_status
        self.cause = cause


def _headers(scope: Scope) -> list[tuple[str, str]]:
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]


def _presented_key(headers: list[tuple[str, str]]) -> str | None:
    for name, value in headers:
        if name == "x-api-key" and value:
            return value.strip()
        if name == "authorization" and value.lower().startswith("bearer "):
            return value[7:].strip()
    return None


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refusal(400, "invalid_request_error", "the client went away before sending its body")
        body += message.get("body", b"")
        if len(body) > MAX_BODY:
            raise Refusal(413, "request_too_large", f"request bodies are limited to {MAX_BODY} bytes")
        if not message.get("more_body"):
            return body


class AmbiguousJson(ValueError):
    """A body that JSON parsers may read differently."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise AmbiguousJson(f"the key {dup!r} appears twice in one object")
    return dict(pairs)


def _constant(name: str) -> Any:
    raise AmbiguousJson(f"{name} is not JSON")


def parse_body(body: bytes) -> Any:
    """The request body as the policy reads it. An unchanged body is forwarded byte for byte, so
    the provider must read it exactly as the policy did: a key given twice (Python keeps the last
    value, another parser may keep the first: `"tools": [web_search], "tools": []`) and
    NaN/Infinity (not JSON; parsers differ) are refused, not resolved."""
    return json.loads(body, object_pairs_hook=_object, parse_constant=_constant)


class ProxyApp:
    """The ASGI app the agent talks to."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = time.monotonic()
        route = ROUTES.get(scope.get("path", ""))
        provider = route[0] if route else None
        row = self.state.usage_log.next_row(provider=provider, endpoint=route[1] if route else None, model=None,
                                         stream=False, status="refused", http_status=0)
        if scope.get("path") == WAIT_PATH:
            await self._provider_wait(scope, send)
            return
        try:
            body = await self._check(scope, receive, row)
        except Refusal as refusal:
            row.status = refusal.log_status
            row.http_status = refusal.status
            row.detail = refusal.message
            row.cause = refusal.cause
            row.latency_s = round(time.monotonic() - started, 6)
            self.state.usage_log.append(row)
            await _send_json(send, refusal.status, error_body(provider, refusal.status, refusal.kind, refusal.message))
            return
        await self._forward(scope, send, body, row, started)

    async def _provider_wait(self, scope: Scope, send: Send) -> None:
        """This turn's provider wait so far, for the turn entrypoint's budget (the caller's own
        attempt only: the same host, client and key checks as a model call; never logged)."""
        try:
            self._check_caller(scope)
            key = _presented_key(_headers(scope))
            if not key or not any(hmac.compare_digest(key.encode(), k.encode()) for k in self.state.secrets.virtual_keys):
                raise Refusal(401, "authentication_error", "invalid API key for this gateway")
        except Refusal as refusal:
            await _send_json(send, refusal.status, error_body(None, refusal.status, refusal.kind, refusal.message))
            return
        turn = self.state.usage_log.turn
        await _send_json(send, 200, {"turn": turn, "provider_wait_s": self.state.wait_clock.wait_s(turn)})

    def _check_caller(self, scope: Scope) -> None:
        """Method, request target, Host header and client address. Raises Refusal."""
        state, cfg = self.state, self.state.config
        method = scope.get("method", "")
        if method == "CONNECT":
            raise Refusal(405, "invalid_request_error", "CONNECT is refused: the gateway tunnels to no host")
        raw_target = scope.get("raw_path") or scope.get("path", "").encode()
        if not raw_target.startswith(b"/"):
            raise Refusal(400, "invalid_request_error",
                          "absolute-form request targets are refused: send the path only, to the gateway itself")
        headers = _headers(scope)
        hosts = [v.lower() for k, v in headers if k == "host"]
        if len(hosts) != 1 or (hosts[0] not in cfg.hosts and hosts[0] not in state.own_hosts):
            shown = hosts[0] if hosts else "(none)"
            raise Refusal(421, "invalid_request_error", f"host {shown!r} is not served here; the gateway forwards "
                          "only to its declared providers")
        client = scope.get("client")
        if state.networks:
            try:
                addr = ipaddress.ip_address(client[0]) if client else None
            except ValueError:
                addr = None
            if addr is None or not any(addr in net for net in state.networks):
                raise Refusal(403, "permission_error", "requests are accepted from this attempt's network only")

    async def _check(self, scope: Scope, receive: Receive, row: UsageRow) -> bytes:
        """Every check before forwarding; returns the request body. Raises Refusal."""
        state, cfg = self.state, self.state.config
        method = scope.get("method", "")
        self._check_caller(scope)
        headers = _headers(scope)
        path = scope.get("path", "")
        if path not in ROUTES:
            raise Refusal(404, "not_found_error", f"path {path!r} is not a provider API the gateway serves")
        provider, endpoint = ROUTES[path]
        if method != "POST":
            raise Refusal(405, "invalid_request_error", f"{method} {path} is not served; use POST")
        if provider not in cfg.providers:
            raise Refusal(404, "not_found_error", f"provider {provider!r} is not declared for this attempt")
        key = _presented_key(headers)
        if not key or not any(hmac.compare_digest(key.encode(), k.encode()) for k in state.secrets.virtual_keys):
            raise Refusal(401, "authentication_error", "invalid API key for this gateway")
        if state.revoked:
            raise Refusal(401, "authentication_error", "this attempt's API key has expired")
        body = await _read_body(receive)
        try:
            doc = parse_body(body) if body else None
        except AmbiguousJson as exc:
            raise Refusal(400, "invalid_request_error", f"refused by the model gateway: {exc}",
                          cause="ambiguous_json") from None
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise Refusal(400, "invalid_request_error", "the request body must be a JSON object")
        model = doc.get("model")
        row.model = model if isinstance(model, str) else None
        row.stream = doc.get("stream") is True
        declared = cfg.providers[provider].models
        if row.model not in declared:
            raise Refusal(400, "invalid_request_error",
                          f"model {model!r} is not declared for this attempt (declared: {', '.join(declared)})")
        try:
            verdict = check_request(endpoint, doc, provider_tools=cfg.provider_tools, response_ids=state.response_ids)
        except PolicyRefusal as refusal:
            raise Refusal(400, "invalid_request_error", f"refused by the model gateway: {refusal.message}",
                          cause=refusal.cause) from None
        self._check_budget(provider)
        # Unchanged bodies go out byte for byte; a rewritten one (store: false) is re-encoded.
        return json.dumps(verdict.doc).encode() if verdict.changed else body

    def _check_budget(self, provider: str) -> None:
        budget, totals = self.state.config.budget, self.state.usage_log.totals
        which = None
        if budget.max_tokens is not None and totals.tokens >= budget.max_tokens:
            which = f"the attempt's token budget is exhausted ({totals.tokens} of {budget.max_tokens} tokens used)"
        elif budget.max_cost_usd is not None and totals.cost_usd >= budget.max_cost_usd:
            which = (f"the attempt's cost budget is exhausted (${totals.cost_usd:.4f} of "
                     f"${budget.max_cost_usd:.4f} used)")
        if which is None:
            return
        # As the providers answer an exhausted balance: Anthropic 400, OpenAI 429 insufficient_quota
        # (both are treated as final by the CLIs, not retried).
        if provider == "openai":
            raise Refusal(429, "insufficient_quota", which, log_status="budget_exhausted")
        raise Refusal(400, "invalid_request_error", which, log_status="budget_exhausted")

    def _upstream_headers(self, scope: Scope, provider: str) -> list[tuple[str, str]]:
        out = [(k, v) for k, v in _headers(scope) if k not in DROP_REQUEST and not k.startswith("proxy-")]
        out.append(("accept-encoding", "identity"))
        real = self.state.secrets.upstream_keys.get(provider)  # type: ignore[call-overload]
        if real:
            out.append(("x-api-key", real) if provider == "anthropic" else ("authorization", f"Bearer {real}"))
        return out

    async def _forward(self, scope: Scope, send: Send, body: bytes, row: UsageRow, started: float) -> None:
        state = self.state
        provider = row.provider or ""
        base = state.config.providers[provider].base_url  # type: ignore[index]
        query = scope.get("query_string", b"").decode("latin-1")
        url = base + scope["path"] + (f"?{query}" if query else "")
        client = state.http()
        headers = self._upstream_headers(scope, provider)

        def make_request() -> httpx.Request:
            return client.build_request("POST", url, headers=headers, content=body)

        try:
            admitted = await send_admitted(state, provider, make_request, row, body)
        except (httpx.HTTPError, LimiterUnavailable) as exc:
            row.status, row.http_status = "upstream_error", 502
            what = "limiter" if isinstance(exc, LimiterUnavailable) else "upstream"
            row.detail = f"{what} unreachable: {type(exc).__name__}"
            row.latency_s = round(time.monotonic() - started, 6)
            state.usage_log.append(row)
            message = f"the model provider could not be reached ({type(exc).__name__})"
            await _send_json(send, 502, error_body(provider, 502, "api_error", message))
            return
        await self._relay(send, admitted, row, started)

    async def _relay(self, send: Send, admitted: Admitted, row: UsageRow, started: float) -> None:
        state, provider, response = self.state, row.provider or "", admitted.response
        row.http_status = response.status_code
        row.status = "ok" if response.status_code < 400 else "upstream_status"
        streaming = response.headers.get("content-type", "").startswith("text/event-stream")
        reader = UsageReader(provider, streaming=streaming)
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items()
                   if k.lower() not in DROP_RESPONSE]
        try:
            await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
            async for chunk in response.aiter_raw():
                if row.ttfb_s is None:
                    row.ttfb_s = round(time.monotonic() - started, 6)
                reader.feed(chunk)
                if reader.usage.response_id is not None:  # at once: the agent may chain on it right away
                    state.response_ids.add(reader.usage.response_id)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except httpx.HTTPError as exc:
            row.status = "upstream_error"
            row.detail = f"upstream broke off mid-answer: {type(exc).__name__}"
            await _finish_quietly(send)
        except OSError as exc:  # the client went away; the call still happened and is metered
            row.detail = f"client disconnected: {type(exc).__name__}"
        finally:
            await response.aclose()
            usage = reader.finish()
            if usage.response_id is not None:
                state.response_ids.add(usage.response_id)
            if usage.model is None:
                usage.model = row.model
            row.latency_s = round(time.monotonic() - started, 6)
            priced_row(row, usage, state.prices)
            state.usage_log.append(row)
            await admitted.done(row.prompt_tokens + row.output_tokens if row.reported else None)


async def _send_json(send: Send, status: int, doc: dict[str, Any]) -> None:
    data = json.dumps(doc).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def _finish_quietly(send: Send) -> None:
    try:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except Exception:  # noqa: BLE001 — the response is already broken; the row says so
        pass
