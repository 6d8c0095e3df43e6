"""The MCP server process of one attempt.

    python -m erp_mcp serve --erp-url http://ERP:PORT --bind HOST:PORT [--openapi-file PATH]

Reads the agent API's OpenAPI document (from `--openapi-file`, or `GET <erp-url>/openapi.json`,
waited for up to `--wait-s`), builds the tools (erp_mcp.tools) and serves MCP over streamable
HTTP at `http://HOST:PORT/mcp`. Every `/mcp` request must carry `Authorization: Bearer <token>`
(the agent's own; 401 otherwise); `GET /health` needs none. Once listening it prints one line,
`{"event": "ready", "mcp": "http://H:P", "tools": N, "pid": N}`. SIGTERM stops it (exit 0).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from erp_mcp.tools import OpenApiError, build_server

MCP_PATH = "/mcp"
EXIT_BAD_INPUT = 2


def fetch_document(erp_url: str, *, wait_s: float) -> dict[str, Any]:
    """`GET /openapi.json` of the ERP, retried while the ERP is not answering yet."""
    deadline = time.monotonic() + wait_s
    last = "no attempt"
    while True:
        try:
            resp = httpx2.get(erp_url.rstrip("/") + "/openapi.json", timeout=10.0, trust_env=False)
            if resp.status_code == 200:
                doc = resp.json()
                if isinstance(doc, dict):
                    return doc
            last = f"HTTP {resp.status_code}"
        except (httpx2.HTTPError, ValueError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            raise OpenApiError(f"no OpenAPI document from {erp_url} within {wait_s:g} s ({last})")
        time.sleep(0.2)


class RequireBearer:
    """401 for an MCP request without a bearer token; `/health` answered here, without one."""

    def __init__(self, app: ASGIApp, tool_count: int) -> None:
        self.app, self.tool_count = app, tool_count

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") == "/health":
            await _json(send, 200, {"ok": True, "tools": self.tool_count})
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        value = headers.get("authorization", "")
        if not value.lower().startswith("bearer ") or not value[7:].strip():
            await _json(send, 401, {"error": "unauthorized", "detail": "send the agent's token as Authorization: Bearer <token>"})
            return
        await self.app(scope, receive, send)


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def _split_bind(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise OpenApiError(f"--bind {text!r}: expected HOST:PORT")
    return host, int(port)


async def _serve(app: ASGIApp, host: str, port: int, tools: int) -> None:
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task  # it failed to start: raise what it raised
            return
        await asyncio.sleep(0.02)
    sock = server.servers[0].sockets[0].getsockname()
    print(json.dumps({"event": "ready", "mcp": f"http://{sock[0]}:{sock[1]}", "tools": tools, "pid": os.getpid()}), flush=True)
    await task


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring)."""
    parser = argparse.ArgumentParser(prog="erp_mcp", description="bb-erp's MCP server, generated from its OpenAPI document")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve MCP over streamable HTTP")
    serve.add_argument("--erp-url", required=True, help="the agent API's base URL")
    serve.add_argument("--bind", required=True, help="HOST:PORT (PORT 0 picks a free port)")
    serve.add_argument("--openapi-file", type=Path, help="read the document from this file instead of the ERP")
    serve.add_argument("--wait-s", type=float, default=60.0, help="how long to wait for the ERP's document")
    args = parser.parse_args(argv)
    try:
        host, port = _split_bind(args.bind)
        if args.openapi_file is not None:
            doc = json.loads(args.openapi_file.read_text(encoding="utf-8"))
        else:
            doc = fetch_document(args.erp_url, wait_s=args.wait_s)
        server = build_server(doc, args.erp_url)
    except (OpenApiError, OSError, ValueError) as exc:
        print(f"erp_mcp: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    tools = asyncio.run(server.list_tools())
    app = RequireBearer(server.http_app(path=MCP_PATH, stateless_http=True), len(tools))
    asyncio.run(_serve(app, host, port, len(tools)))
    return 0
