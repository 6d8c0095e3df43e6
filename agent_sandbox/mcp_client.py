"""The agent API through bb-erp's MCP server, for scripted policies and tests (issue 17).

`McpSession` is a real MCP client (the MCP SDK's `ClientSession` over streamable HTTP) with the
agent's token as its bearer, driven from synchronous code through a private event loop thread.
`McpTransport` is a client transport (http_transport.py) that sends each agent API request as
the matching tool call instead: the tool is found by the HTTP twin each tool names in its `_meta.http` (method,
path template, where each argument goes), so `ErpClient(url, token, transport=McpTransport(...))`
and every policy written against `ErpClient` run unchanged through MCP. A tool error carries the
problem document as its text; it comes back as the HTTP answer it stands for (status, problem).
"""
from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, PaginatedRequestParams, TextContent, Tool

from agent_sandbox.client import ErpClient
from agent_sandbox.http_transport import Answer, Headers, Request, Transport, TransportError

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 120.0


class McpError(RuntimeError):
    """The MCP server could not be reached, or answered something that is no tool result."""


class McpSession:
    """One MCP session with the agent's token, usable from synchronous code."""

    def __init__(self, url: str, token: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if not url or not token:
            raise ValueError("McpSession needs the MCP server's URL and the agent's token")
        self.url, self.timeout_s = url, timeout_s
        self._token = token
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()
        self._closed = asyncio.Event()
        self._ready: Future[ClientSession] = Future()
        self._runner = asyncio.run_coroutine_threadsafe(self._hold(), self._loop)
        try:
            self.session = self._ready.result(timeout=timeout_s)
        except Exception as exc:
            self.close()
            cause = _leaf(exc)
            raise McpError(f"cannot open an MCP session at {url}: {type(cause).__name__}: {cause} ({_where(url)})") from exc

    async def _hold(self) -> None:
        """Open the transport and the session, and keep them open until `close`."""
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=self.timeout_s, trust_env=False) as http,
                streamable_http_client(self.url, http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                self._ready.set_result(session)
                await self._closed.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=self.timeout_s + 5)

    def list_tools(self) -> list[Tool]:
        """Every tool, all pages."""
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            page = self._run(self.session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None))
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools

    def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """One tool call; a tool error is a result with `is_error`, not an exception."""
        return self._run(self.session.call_tool(name, arguments))

    def close(self) -> None:
        """End the session and stop the loop thread."""
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._closed.set)
            try:
                self._runner.result(timeout=10)
            except Exception:  # noqa: BLE001 — closing: what it raised no longer matters
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> McpSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _where(url: str) -> str:
    """What the server's name resolves to, for an error message."""
    host = urlsplit(url).hostname or url
    try:
        return f"{host} is {sorted({a[4][0] for a in socket.getaddrinfo(host, None)})}"
    except OSError as exc:
        return f"{host} does not resolve: {exc}"


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: the one that says what went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def result_text(result: CallToolResult) -> str:
    """The text content of a tool result, joined."""
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def result_json(result: CallToolResult) -> Any:
    """The JSON a tool answered: its structured content, else its text parsed."""
    if result.structured_content is not None and not result.is_error:
        return result.structured_content
    try:
        return json.loads(result_text(result))
    except ValueError:
        raise McpError(f"the tool answered no JSON: {result_text(result)[:200]!r}") from None


@dataclass(frozen=True)
class ToolRoute:
    """A tool and its HTTP twin, from the tool's `_meta.http`."""

    name: str
    method: str
    path: str
    pattern: re.Pattern[str]
    arguments: dict[str, dict[str, str]]  # argument -> {"in": path|query|header|body, "name": ...}
    types: dict[str, str]  # argument -> JSON type of its schema, for query strings

    @classmethod
    def of(cls, tool: Tool) -> ToolRoute | None:
        """None for a tool that names no HTTP twin."""
        http = (tool.meta or {}).get("http")
        if not isinstance(http, dict):
            return None
        path = str(http["path"])
        regex = "".join(f"(?P<{re.sub(r'[^0-9A-Za-z_]', '_', part[1:-1])}>[^/]+)" if part.startswith("{") else re.escape(part)
                        for part in re.split(r"(\{[^}]+\})", path))
        props = (tool.input_schema or {}).get("properties", {})
        return cls(tool.name, str(http["method"]).upper(), path, re.compile(f"^{regex}$"),
                   dict(http.get("arguments") or {}), {k: _json_type(v) for k, v in props.items()})

    def argument_for(self, where: str, name: str) -> str | None:
        for arg, spec in self.arguments.items():
            if spec.get("in") == where and spec.get("name", "").lower() == name.lower():
                return arg
        return None


def _json_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return ""
    if "type" in schema:
        return str(schema["type"])
    for alt in schema.get("anyOf", []) or []:
        if isinstance(alt, dict) and alt.get("type") not in (None, "null"):
            return str(alt["type"])
    return ""


def _coerce(text: str, kind: str) -> Any:
    """A query string value as the type its schema declares (MCP arguments are typed JSON)."""
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


class McpTransport(Transport):
    """A client transport that sends agent API requests as MCP tool calls (module docstring)."""

    def __init__(self, session: McpSession) -> None:
        self.session = session
        self.routes = [r for r in (ToolRoute.of(t) for t in session.list_tools()) if r is not None]
        self.calls = 0

    def find(self, method: str, path: str) -> tuple[ToolRoute, dict[str, str]] | None:
        """The tool for `method path`, with the path parameters it matched."""
        for route in self.routes:
            if route.method == method:
                m = route.pattern.match(path)
                if m:
                    return route, {k: unquote(v) for k, v in m.groupdict().items()}
        return None

    def arguments(self, route: ToolRoute, request: Request, path_values: dict[str, str]) -> dict[str, Any]:
        """The tool arguments standing for `request`."""
        args: dict[str, Any] = {}
        for arg, spec in route.arguments.items():
            if spec.get("in") == "path":
                key = re.sub(r"[^0-9A-Za-z_]", "_", spec.get("name", arg))
                if key in path_values:
                    args[arg] = path_values[key]
        for name, value in request.query:
            arg = route.argument_for("query", name) or str(name)
            args[arg] = _coerce(value, route.types.get(arg, ""))
        for header, text in request.headers.items():
            found = route.argument_for("header", header)
            if found is not None:
                args[found] = text
        content = request.content
        if content:
            body = json.loads(content)
            body_args = [a for a, s in route.arguments.items() if s.get("in") == "body"]
            if isinstance(body, dict) and not (len(body_args) == 1 and route.arguments[body_args[0]].get("name") == "body"):
                args.update(body)
            elif body_args:
                args[body_args[0]] = body
        return args

    def send(self, request: Request, timeout_s: float) -> Answer:
        method, path = request.method.upper(), request.path
        found = self.find(method, path)
        if found is None:
            missing = {"type": "https://bb-erp.dev/errors/no_route", "title": "no_route", "status": 404, "code": "no_route",
                       "detail": f"No MCP tool stands for {method} {path}."}
            return _answer(404, missing, problem=True)
        route, path_values = found
        self.calls += 1
        try:
            result = self.session.call_tool(route.name, self.arguments(route, request, path_values))
        except Exception as exc:
            raise TransportError(f"MCP tool {route.name} failed: {type(exc).__name__}: {exc}") from exc
        if result.is_error:
            problem: Any
            try:
                problem = json.loads(result_text(result))
            except ValueError:
                problem = None
            if not isinstance(problem, dict) or not isinstance(problem.get("status"), int):
                # A tool error that is no ERP answer (bad arguments caught by the MCP layer).
                problem = {"status": 422, "code": "invalid", "title": "invalid", "detail": result_text(result)[:1000]}
            return _answer(int(problem["status"]), problem, problem=True)
        return _answer(201 if method == "POST" else 200, result_json(result))

    def close(self) -> None:
        self.session.close()


def _answer(status: int, body: Any, *, problem: bool = False) -> Answer:
    kind = "application/problem+json" if problem else "application/json"
    headers = {"content-type": kind}
    if isinstance(body, dict) and body.get("business_date"):
        headers["x-business-date"] = str(body["business_date"])
    return Answer(status, Headers(headers), json.dumps(body).encode())


def mcp_erp_client(erp_url: str, mcp_url: str, token: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> ErpClient:
    """An `ErpClient` whose every request is an MCP tool call on `mcp_url` (`/mcp` added when
    the URL has no path), with the agent's token; closing it ends the MCP session."""
    url = mcp_url.rstrip("/")
    if urlsplit(url).path in ("", "/"):
        url += "/mcp"
    transport = McpTransport(McpSession(url, token, timeout_s=timeout_s))
    return ErpClient(erp_url, token, timeout=timeout_s, transport=transport)
