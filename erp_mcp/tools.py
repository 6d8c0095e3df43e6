"""The MCP server built from the agent API's OpenAPI document.

Tool names are the operation ids (a `.` becomes `_`, as MCP clients such as Claude Code allow
only letters, digits, `_` and `-`); descriptions and input schemas come from the document (the
problem responses it documents included). Each call is sent to the agent API with the bearer
token of the MCP request that made it: the server holds no token of its own, and a call without
one is answered 401 by the ERP like any other request. An HTTP error answer comes back as a tool
error whose text is the problem document (`status`, `code`, `detail`, ...), as JSON.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Generator
from typing import Any

import httpx2
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.server.middleware.middleware import CallNext
from fastmcp.server.providers.openapi import MCPType, RouteMap
from fastmcp.tools.base import ToolResult
from fastmcp.utilities.openapi import HTTPRoute

SERVER_NAME = "bb-erp"
# Paths that are never tools, whatever a document says: the control API is the host's, and the
# document itself is no action.
EXCLUDED_PREFIXES = ("/control",)
EXCLUDED_PATHS = frozenset({"/openapi.json"})
DEFAULT_TIMEOUT_S = 120.0
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class OpenApiError(ValueError):
    """A document the server cannot be built from (the message says what is wrong)."""


def agent_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with every path the agent may not call as a tool removed."""
    if not isinstance(doc, dict) or not str(doc.get("openapi", "")).startswith("3."):
        raise OpenApiError("not an OpenAPI 3 document (no 'openapi: 3.x' field)")
    paths = doc.get("paths")
    if not isinstance(paths, dict) or not paths:
        raise OpenApiError("the OpenAPI document has no paths")
    kept = {p: ops for p, ops in paths.items() if p not in EXCLUDED_PATHS and not p.startswith(EXCLUDED_PREFIXES)}
    return {**doc, "paths": kept, "servers": []}


class ForwardBearer(httpx2.Auth):
    """Puts the MCP request's own `Authorization` header on the call to the ERP.

    A write whose tool call has no body argument goes out with the body `{}`, as the `erp`
    command sends it: the same request, so the same audit row and idempotency fingerprint.
    """

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        if request.method in BODY_METHODS and not request.content:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in ("content-length", "content-type")}
            headers["Content-Type"] = "application/json"
            request = httpx2.Request(request.method, request.url, headers=headers, content=b"{}", extensions=request.extensions)
        incoming = get_http_headers(include={"authorization"})
        value = incoming.get("authorization")
        if value:
            request.headers["Authorization"] = value
        else:
            request.headers.pop("Authorization", None)
        yield request


class ProblemAsToolError(Middleware):
    """An HTTP error answer of the ERP becomes a tool error holding its problem document."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult]) -> ToolResult:
        try:
            return await call_next(context)
        except Exception as exc:
            answer = _http_status_error(exc)
            if answer is None:
                raise
            return ToolResult(content=problem_text(answer.response), is_error=True)


def _http_status_error(exc: BaseException | None) -> httpx2.HTTPStatusError | None:
    """The ERP's error answer behind `exc` (FastMCP wraps it in a ToolError), if it is one."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, httpx2.HTTPStatusError):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def problem_text(response: httpx2.Response) -> str:
    """The problem document of an error answer as JSON text, `status` first; a body that is not
    a JSON object is wrapped so the text still names status and code."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"code": "http_error", "detail": response.text[:1000]}
    return json.dumps({"status": response.status_code, **body}, ensure_ascii=False, sort_keys=True)


def failure_lines(doc: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """(METHOD, path) -> one line per problem response the document lists for the operation."""
    out: dict[tuple[str, str], list[str]] = {}
    for path, ops in doc.get("paths", {}).items():
        for method, op in ops.items():
            if isinstance(op, dict):
                out[(method.upper(), path)] = [f"- {status}: {resp.get('description', '')}" for status, resp in sorted(op.get("responses", {}).items())
                                               if str(status)[:1] in ("4", "5") and isinstance(resp, dict)]
    return out


def http_twin_describer(doc: dict[str, Any]) -> Callable[[HTTPRoute, Any], None]:
    """The `mcp_component_fn` of the server: each tool's description ends with the problem
    responses it can give (from the document: FastMCP keeps only the success response), and its
    `_meta` names its HTTP twin (method, path template, operation id, and where each argument
    goes: path, query, header or body), so a client can map an API call to its tool and back."""
    failures = failure_lines(doc)

    def describe(route: HTTPRoute, component: Any) -> None:
        lines = failures.get((route.method.upper(), route.path), [])
        if lines:
            component.description = (component.description or "").rstrip() + "\n\nErrors (application/problem+json):\n" + "\n".join(lines)
        arguments = {name: {"in": m["location"], "name": m["openapi_name"]} for name, m in sorted(route.parameter_map.items())}
        component.meta = {**(component.meta or {}), "http": {"method": route.method.upper(), "path": route.path,
                                                           "operation_id": route.operation_id, "arguments": arguments}}

    return describe


def build_server(doc: dict[str, Any], erp_url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> FastMCP:
    """The MCP server for the agent API at `erp_url`, from its OpenAPI document `doc`."""
    agent_doc = agent_document(doc)
    # trust_env=False: the host's proxy variables must never route the agent's calls elsewhere.
    client = httpx2.AsyncClient(base_url=erp_url.rstrip("/"), auth=ForwardBearer(), timeout=timeout_s, trust_env=False)
    server = FastMCP.from_openapi(
        openapi_spec=agent_doc,
        client=client,
        name=SERVER_NAME,
        route_maps=[RouteMap(mcp_type=MCPType.TOOL)],  # every operation a tool (no resources)
        mcp_component_fn=http_twin_describer(agent_doc),
        instructions=str(doc.get("info", {}).get("description") or "") or None,
    )
    server.add_middleware(ProblemAsToolError())
    return server
