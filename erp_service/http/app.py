"""The agent API: FastAPI app with every domain's routes, problem+json errors and audit of
requests that fail before reaching a service function.

Failures of the storage (a full disk, an I/O error, a database locked by another process) are
503 ``storage_unavailable`` problems, audited where the audit row can still be written; any
other unexpected exception is a 500 ``server_error``. Neither is ever a plain-text answer."""
from __future__ import annotations

import sqlite3
from typing import Any

import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..kernel import pipeline
from ..kernel.db import Database
from ..kernel.errors import Problem, invalid
from .api import ErpJSONResponse, resolve_token, route_action
from .inline_routes import InlineRoute
from .lazy_routes import mount
from .limits import RequestLimits
from .openapi_problems import install_problem_docs

API_TITLE = "bb-erp"
API_VERSION = "1.0.0"


class ProblemResponse(ErpJSONResponse):
    """application/problem+json."""

    media_type = "application/problem+json"


def _business_date(db: Database) -> str | None:
    try:
        return db.business_date()
    except Exception:  # a broken database must still produce a problem document
        return None


def _actor_of(request: Request):
    actor = getattr(request.state, "actor", None)
    if actor is not None:
        return actor
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        try:
            return resolve_token(request.app.state.db, request.app.state.token_cache, header[7:].strip())
        except Exception:
            return None
    return None


async def _request_body(request: Request) -> Any:
    if request.method == "GET":
        return dict(request.query_params)
    try:
        raw = await request.body()
    except Exception:
        return None
    if not raw:
        return None
    text = raw[:20_000].decode("utf-8", errors="replace")
    import json
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text}


def problem_response(db: Database, problem: Problem) -> ProblemResponse:
    """Render a problem with the business date."""
    today = _business_date(db)
    headers = {"X-Business-Date": today} if today else {}
    return ProblemResponse(problem.body(today), status_code=problem.status, headers=headers)


def _validation_detail(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "The request is not valid."
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body",)) or "request"
    more = f" ({len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid value')}{more}."


def install_error_handlers(app: FastAPI) -> None:
    """Problems, validation errors, unknown routes and crashes all become audited problem+json."""

    async def audit_and_render(request: Request, problem: Problem) -> ProblemResponse:
        db: Database = request.app.state.db
        if not problem.audited:
            try:
                pipeline.audit_failure(db, _actor_of(request), method=request.method, path=request.url.path,
                                       action=route_action(request), problem=problem,
                                       request=await _request_body(request))
            except Exception as exc:
                if db.note_failure(exc) is None:
                    raise
                # A refusal that cannot be audited is not answered as if it were: the storage failed.
                problem = storage_unavailable()
        return problem_response(db, problem)

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem):
        return await audit_and_render(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        return await audit_and_render(request, invalid(_validation_detail(exc)))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 404:
            problem = Problem(404, "no_route", f"There is no route {request.method} {request.url.path}.")
        elif exc.status_code == 405:
            problem = Problem(405, "method_not_allowed",
                              f"{request.method} is not allowed on {request.url.path}.", outcome="invalid")
        elif exc.status_code == 400:   # FastAPI could not read the body: malformed input, 422
            problem = invalid(f"The request body could not be read: {exc.detail}")
        else:
            problem = Problem(exc.status_code, "http_error", str(exc.detail), outcome="invalid")
        return await audit_and_render(request, problem)

    # Database and OS errors are handled in the exception middleware (not re-raised after the
    # answer, as the catch-all below is, which would also drop the keep-alive connection).
    @app.exception_handler(sqlalchemy.exc.DBAPIError)
    @app.exception_handler(sqlite3.Error)
    @app.exception_handler(OSError)
    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception):
        db: Database = request.app.state.db
        cause = db.note_failure(exc)
        body = await _request_body(request)
        problem = storage_unavailable() if cause else \
            Problem(500, "server_error", "The ERP failed to handle this request.")
        try:
            if cause:   # the cause goes to the audit log (the host's), not to the agent
                pipeline.audit_failure(db, _actor_of(request), method=request.method, path=request.url.path,
                                       action=route_action(request), problem=problem,
                                       request={"request": body, "storage_error": cause})
            else:
                pipeline.audit_crash(db, _actor_of(request), method=request.method, path=request.url.path,
                                     action=route_action(request), request=body, exc=exc)
        except Exception as audit_exc:  # noqa: BLE001 — the answer goes out even when the audit cannot
            audit_cause = db.note_failure(audit_exc)
            if audit_cause and not cause:
                problem = storage_unavailable()
        return problem_response(db, problem)


def storage_unavailable() -> Problem:
    """The 503 problem of a storage failure (its cause goes to the audit row, never to the
    agent's answer)."""
    return Problem(503, "storage_unavailable",
                   "The ERP cannot use its storage right now; nothing was changed. Try again later.",
                   outcome="error")


def operation_id_of(route: APIRoute) -> str:
    """The OpenAPI operationId of a route that declares none. Writes carry their action code as
    operation_id; reads get ``read_`` + the path's literal segments, plus ``_by_id`` when the
    path ends in a parameter: ``GET /ap-invoices`` -> ``read_ap_invoices``,
    ``GET /ap-invoices/{invoice_id}`` -> ``read_ap_invoices_by_id``. Paths are unique per method,
    so the ids are too (function names are not: several modules have a ``list_invoices``)."""
    segments = [seg for seg in route.path_format.strip("/").split("/") if seg]
    words = [seg.replace("-", "_") for seg in segments if not seg.startswith("{")]
    name = "_".join(words) or "root"
    if segments and segments[-1].startswith("{"):
        name += "_by_id"
    methods = sorted(m for m in (route.methods or []) if m != "HEAD")
    if methods == ["GET"]:
        return f"read_{name}"
    return f"{'_'.join(m.lower() for m in methods)}_{name}"


def create_app(db: Database, world: Any = None) -> FastAPI:
    """The agent-facing application over an open database. `world` (a `sim.World`) is what
    request-time scripted behaviour reads, e.g. call transcripts; default: an empty world."""
    from ..domains import ROUTERS
    from ..sim import World

    app = FastAPI(title=API_TITLE, version=API_VERSION, openapi_url="/openapi.json",
                  docs_url=None, redoc_url=None, default_response_class=ErpJSONResponse,
                  generate_unique_id_function=operation_id_of,
                  description="bb-erp agent API. Every response carries the business date; "
                              "errors are application/problem+json; writes accept Idempotency-Key.")
    app.state.db = db
    app.state.world = world if world is not None else World({})
    app.state.token_cache = {}
    install_error_handlers(app)
    app.add_middleware(RequestLimits)
    app.router.route_class = InlineRoute  # plain-def endpoints run on the loop when the database is free
    mount(app.router, ROUTERS)  # each route is built at its first request (or by /openapi.json)
    install_problem_docs(app)  # every problem response a route can give, in /openapi.json
    return app
