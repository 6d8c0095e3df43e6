"""Generators act through the ERP's own HTTP API, in process: every document of the history
passes the same validation, controls and postings an agent's request would.

Requests are driven straight into the ASGI application on one private event loop (no sockets,
no test-client threads), which keeps a year of history to seconds."""
from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

from erp_service.http.app import create_app
from erp_service.sim import World


class GenerationError(RuntimeError):
    """A request the generator made was refused: the scenario plan is inconsistent."""


class InProcessErp:
    """The agent API over the builder's open database, with one token per user."""

    def __init__(self, builder, tokens: dict[str, str], world: dict[str, Any] | None = None) -> None:
        self.builder = builder
        self.tokens = tokens
        self.world = World(world or {})
        self.app = create_app(builder.db, self.world)
        self._loop = asyncio.new_event_loop()

    def close(self) -> None:
        """Close the private event loop."""
        self._loop.close()

    async def _request(self, method: str, path: str, body: bytes, query: str, headers: list) -> tuple[int, bytes]:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "", "headers": headers, "client": ("127.0.0.1", 1), "server": ("erp", 80)}
        sent = False
        status = 500
        chunks: list[bytes] = []

        async def receive():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, b"".join(chunks)

    def call(self, user: str, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One request as `user`; returns `data` or raises GenerationError with the problem."""
        raw = json.dumps(body).encode() if body is not None else b""
        headers = [(b"authorization", f"Bearer {self.tokens[user]}".encode()), (b"host", b"erp")]
        if body is not None:
            headers.append((b"content-type", b"application/json"))
            headers.append((b"content-length", str(len(raw)).encode()))
        query = urlencode({k: v for k, v in params.items() if v is not None})
        status, out = self._loop.run_until_complete(self._request(method, path, raw, query, headers))
        if status >= 400:
            raise GenerationError(f"{user} {method} {path} -> {status}: {out[:400].decode(errors='replace')}")
        return json.loads(out)["data"]

    def get(self, user: str, path: str, **params: Any) -> Any:
        """GET as `user`."""
        return self.call(user, "GET", path, **params)

    def post(self, user: str, path: str, body: Any = None) -> Any:
        """POST as `user`."""
        return self.call(user, "POST", path, body)
