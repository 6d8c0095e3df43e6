"""Limits on what one request may send, applied before anything parses it.

An agent can send anything through its API. Without limits, one 256 MiB body is read whole
into memory (the ERP is OOM-killed and the attempt looked like an infrastructure failure) and
JSON nested a thousand deep ends in a `RecursionError` (a 500). Here both are ordinary
refusals the agent meets as errors: 413 ``payload_too_large`` and 422 ``invalid``, audited as
``invalid`` like any malformed input, with nothing changed. A body that is not UTF-8 is the
contract's 422 too (FastAPI's own answer would be a 400 ``http_error``).

The layer buffers at most `MAX_BODY_BYTES` of a body. The rest of an oversized body is read
and dropped (so the client, still sending, gets the 413 instead of a reset connection), up to
`DRAIN_MAX_BYTES`; past that the connection is closed after the answer.
"""
from __future__ import annotations

import re
from typing import Any

import anyio
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..kernel import pipeline
from ..kernel.db import Database
from ..kernel.errors import Problem, invalid
from .api import ErpJSONResponse, resolve_token

MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_JSON_DEPTH = 32
DRAIN_MAX_BYTES = 1024 * 1024 * 1024
#: How much of a refused body the audit row keeps (as text).
AUDIT_EXCERPT_CHARS = 2000

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(body: bytes, limit: int) -> int:
    """The nesting depth of the arrays and objects in `body` (strings skipped), counted
    without parsing; stops counting once past `limit`. Cheap on any body this layer buffers."""
    skeleton = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for ch in skeleton:
        if ch in (0x5B, 0x7B):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def too_large(limit: int) -> Problem:
    """The 413 problem of an oversized body."""
    return Problem(413, "payload_too_large",
                   f"The request body is larger than the limit of {limit} bytes.", outcome="invalid",
                   limit_bytes=limit)


class RequestLimits:
    """ASGI middleware (installed by `create_app`): body size, JSON depth and UTF-8 checks."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int = MAX_BODY_BYTES,
                 max_json_depth: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        problem: Problem | None = None
        body = b""
        if declared is not None and declared > self.max_body_bytes:
            problem = too_large(self.max_body_bytes)
            if declared <= DRAIN_MAX_BYTES:
                await _drain(receive, DRAIN_MAX_BYTES)
        else:
            chunks: list[bytes] = []
            size = 0
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return   # the client has gone: nobody to answer
                chunk = message.get("body", b"")
                size += len(chunk)
                more = message.get("more_body", False)
                if size > self.max_body_bytes:
                    problem = too_large(self.max_body_bytes)
                    if more:
                        await _drain(receive, DRAIN_MAX_BYTES - size)
                    break
                chunks.append(chunk)
            if problem is None:
                body = b"".join(chunks)
                problem = self._check_text(body)
        if problem is not None:
            await self._refuse(scope, send, problem, body)
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _check_text(self, body: bytes) -> Problem | None:
        if not body:
            return None
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return invalid(f"The request body is not valid UTF-8 (byte {exc.start}).")
        if json_depth(body, self.max_json_depth) > self.max_json_depth:
            return invalid(f"The request body nests arrays and objects deeper than {self.max_json_depth} levels.",
                           max_depth=self.max_json_depth)
        return None

    async def _refuse(self, scope: Scope, send: Send, problem: Problem, body: bytes) -> None:
        app = scope["app"]
        db: Database = app.state.db
        excerpt = body[:AUDIT_EXCERPT_CHARS].decode("utf-8", errors="replace") if body else None
        action = _route_action(app, scope)
        secret = _bearer(scope)

        def audit() -> str | None:
            actor = None
            if secret:
                try:
                    actor = resolve_token(db, app.state.token_cache, secret)
                except Exception:  # noqa: BLE001 — the refusal is audited without an actor then
                    actor = None
            pipeline.audit_failure(db, actor, method=scope["method"], path=scope["path"], action=action,
                                   problem=problem, request={"unparsed": excerpt} if excerpt else None)
            try:
                return db.business_date()
            except Exception:  # noqa: BLE001
                return None

        try:
            today = await anyio.to_thread.run_sync(audit)
        except Exception as exc:  # noqa: BLE001 — a refusal is answered even when it cannot be audited
            db.note_failure(exc)
            today = None
        headers = {"X-Business-Date": today} if today else {}
        if problem.status == 413:
            headers["Connection"] = "close"
        response = ErpJSONResponse(problem.body(today), status_code=problem.status, headers=headers,
                                   media_type="application/problem+json")

        async def no_more() -> Message:
            return {"type": "http.disconnect"}

        await response(scope, no_more, send)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _bearer(scope: Scope) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            text = value.decode("latin-1")
            if text.lower().startswith("bearer "):
                return text[7:].strip() or None
    return None


def _route_action(app: Any, scope: Scope) -> str:
    """The action code of the route the request would have reached (see `api.route_action`):
    the operationId of the OpenAPI path and method that match, or ``read``."""
    if scope["method"] == "GET":
        return "read"
    table = getattr(app.state, "write_actions", None)
    if table is None:
        table = []
        for template, ops in app.openapi().get("paths", {}).items():
            regex = compile_path(template)[0]
            for method, op in ops.items():
                if method.upper() != "GET" and op.get("operationId"):
                    table.append((method.upper(), regex, op["operationId"]))
        app.state.write_actions = table
    for method, regex, action in table:
        if method == scope["method"] and regex.match(scope["path"]):
            return action
    return "read"


async def _drain(receive: Receive, budget: int) -> None:
    """Read and drop the rest of a body, at most `budget` bytes more."""
    while budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return
