"""What a router needs: the `Api` dependency (actor + request + pipeline), response envelopes,
input-model base class, pagination parameters.

A write route declares its action code as the route's ``operation_id`` and takes
``api: Api = Depends(write_api)``; a read route takes ``api: Api = Depends(read_api)``.
The action code doubles as the permission unless the route sets
``openapi_extra={"x-permission": "..."}``.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from typing import Any, Generic, TypeVar

import orjson
from fastapi import Depends, Header, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from ..kernel import pipeline
from ..kernel.db import Database
from ..kernel.errors import invalid, unauthorized
from ..kernel.identity import Actor, actor_for_token
from ..kernel.listing import DEFAULT_LIMIT, MAX_LIMIT, PageRequest
from ..kernel.tx import Tx

T = TypeVar("T")

# The dependencies below are `async def` although they do no I/O on their usual path: FastAPI runs
# a plain `def` dependency in its thread pool, and a read took four thread hops (three of them for
# these) before the route's own; each hop costs a worker wake-up and a GIL hand-over.


class In(BaseModel):
    """Base of every request body: unknown fields are refused (422)."""

    model_config = ConfigDict(extra="forbid")


class Envelope(BaseModel, Generic[T]):
    """Every successful response: the business date and the data."""

    business_date: date
    data: T


class Page(BaseModel, Generic[T]):
    """A page of a list."""

    items: list[T]
    total: int
    offset: int
    limit: int


async def page_params(offset: int = Query(0, ge=0, le=2**62, description="Rows to skip."),
                      limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT,
                                         description=f"Rows to return (default {DEFAULT_LIMIT}, maximum {MAX_LIMIT}).")
                      ) -> PageRequest:
    """Pagination query parameters."""
    return PageRequest(offset=offset, limit=limit)


_bearer = HTTPBearer(auto_error=False, description="The user's API token.")


async def _actor(request: Request, cred: HTTPAuthorizationCredentials | None) -> Actor:
    """The authenticated user (401 otherwise). Remembered on the request for failure audits.
    Called by `read_api` and `write_api` themselves, not declared as their dependency: each
    dependency level costs FastAPI a solve per request, and the bearer scheme is still declared
    (and documented) by their `Depends(_bearer)`."""
    if cred is None or not cred.credentials:
        raise unauthorized()
    cache: dict[str, Actor] = request.app.state.token_cache
    actor = cache.get(cred.credentials)
    if actor is None:  # the database lookup (and its lock) stays off the event loop
        actor = await run_in_threadpool(resolve_token, request.app.state.db, cache, cred.credentials)
    if actor is None:
        raise unauthorized("The bearer token is not valid.")
    request.state.actor = actor
    return actor


def resolve_token(db: Database, cache: dict[str, Actor], secret: str) -> Actor | None:
    """Token lookup with a per-process cache (users and roles do not change through the API)."""
    actor = cache.get(secret)
    if actor is None:
        with db.transaction() as conn:
            actor = actor_for_token(conn, secret)
        if actor is not None:
            cache[secret] = actor
    return actor


# orjson writes the same compact UTF-8 JSON as the standard library's `json.dumps(...,
# ensure_ascii=False, separators=(",", ":"), default=str)` several times faster (a 50-row page was
# a tenth of a read). Dates, times and dataclasses are passed to `default=str` as the standard
# library does; a value orjson refuses (an integer past 64 bits, nesting past 254 levels, a lone
# surrogate) is rendered by the standard library, so nothing it answered before changes. Numbers
# keep their value; a float's exponent may be spelt differently (1e16 for 1e+16).
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def render_json(content: Any) -> bytes:
    """`content` as compact UTF-8 JSON, with `str()` of anything JSON has no type for."""
    try:
        return orjson.dumps(content, default=str, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")


class ErpJSONResponse(JSONResponse):
    """JSON with a string fallback for dates and decimals."""

    def render(self, content: Any) -> bytes:
        return render_json(content)


def respond(outcome: pipeline.RequestOutcome) -> JSONResponse:
    """The JSON envelope for an outcome, with the business date header and replay marker."""
    headers = {"X-Business-Date": outcome.business_date}
    if outcome.replay:
        headers["Idempotent-Replay"] = "true"
    return ErpJSONResponse({"business_date": outcome.business_date, "data": outcome.data},
                           status_code=outcome.status, headers=headers)


class Api:
    """One request's access to the pipeline."""

    def __init__(self, request: Request, actor: Actor, *, body: Any = None, idem_key: str | None = None,
                 action: str = "read", permission: str | None = None) -> None:
        self.request = request
        self.db: Database = request.app.state.db
        self.actor = actor
        self.body = body
        self.idem_key = idem_key
        self.action = action
        self.permission = permission

    @property
    def path(self) -> str:
        """The request path (without the query)."""
        return self.request.url.path

    def write(self, fn: Callable[[Tx], Any], *, object_type: str | None = None,
              object_id: str | None = None, ok_status: int | None = None) -> JSONResponse:
        """Run `fn` as this request's state change and respond with its result."""
        status = ok_status or (201 if self.request.method == "POST" else 200)
        outcome = pipeline.write(self.db, self.actor, action=self.action, method=self.request.method,
                                 path=self.path, body=self.body, fn=fn, idem_key=self.idem_key,
                                 permission=self.permission, object_type=object_type,
                                 object_id=object_id, ok_status=status)
        return respond(outcome)

    def read(self, fn: Callable[[Tx], Any], *, object_type: str | None = None,
             object_id: str | None = None) -> JSONResponse:
        """Run `fn` as a read and respond with its result."""
        outcome = pipeline.read(self.db, self.actor, method=self.request.method, path=self.path,
                                query=dict(self.request.query_params), fn=fn,
                                object_type=object_type, object_id=object_id)
        return respond(outcome)


def route_action(request: Request) -> str:
    """The action code of the matched route (its operation_id), or ``read``."""
    route = request.scope.get("route")
    op = getattr(route, "operation_id", None)
    return op if (op and request.method != "GET") else "read"


async def write_api(request: Request, cred: HTTPAuthorizationCredentials | None = Depends(_bearer),
                    idempotency_key: str | None = Header(
                        None, alias="Idempotency-Key", max_length=200,
                        description="Send the same key to retry a write safely; the first result is returned.")
                    ) -> Api:
    """Dependency for write routes."""
    actor = await _actor(request, cred)
    raw = await request.body()
    try:   # request.json(): what FastAPI parsed for the body model already, not parsed again
        body = await request.json() if raw else None
    except ValueError:  # routes without a body model never had FastAPI parse it: 422, not 500
        raise invalid("The request body is not valid JSON.") from None
    route = request.scope.get("route")
    extra = getattr(route, "openapi_extra", None) or {}
    return Api(request, actor, body=body, idem_key=idempotency_key, action=route_action(request),
               permission=extra.get("x-permission"))


async def read_api(request: Request, cred: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Api:
    """Dependency for read routes."""
    return Api(request, await _actor(request, cred))

