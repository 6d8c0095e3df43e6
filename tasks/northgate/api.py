"""Generators act through the ERP's own routes, in process: every document of the history
passes the same validation, permission check, controls, postings and audit row an agent's
HTTP request would.

`InProcessErp.call(user, method, path, body, **query)` finds the route that HTTP would dispatch
to (the registered routers, in their order), validates the path parameters, query and body with
the route's own field definitions, and calls the route's endpoint function with the user's
token-resolved `Actor` — the function then runs its service code through
`erp_service.kernel.pipeline.write/read` exactly as under HTTP (same method, path, action code,
permission). What it skips is only the transport: sockets, ASGI middleware and, above all, the
thread hop FastAPI makes for every synchronous endpoint and dependency, which dominated the
generator's time. The answer is the JSON the endpoint rendered, decoded, as a client sees it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import compile_path

from erp_service.http.api import Api, resolve_token
from erp_service.http.lazy_routes import DomainRouter, RouteSpec
from erp_service.kernel.errors import Problem
from erp_service.kernel.listing import DEFAULT_LIMIT, PageRequest
from erp_service.sim import World
from tasks.errors import GenerationError


@dataclass
class _Url:
    path: str


@dataclass
class _Request:
    """The parts of a Starlette request that `Api` and the endpoints read."""

    app: Any
    method: str
    url: _Url
    query_params: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)
    scope: dict[str, Any] = field(default_factory=dict)
    state: SimpleNamespace = field(default_factory=SimpleNamespace)


@dataclass
class _Route:
    method: str
    regex: re.Pattern
    router: DomainRouter
    spec: RouteSpec
    _built: APIRoute | None = None

    @property
    def route(self) -> APIRoute:
        """FastAPI's route, built at the first call (a pack calls a dozen of the ~150)."""
        if self._built is None:
            self._built = self.router.build(self.spec)
        return self._built

    @property
    def permission(self) -> str | None:
        return self.spec.permission


def _routes() -> list[_Route]:
    """Every API route, in the order HTTP dispatch tries them (declared, not yet built)."""
    from erp_service.domains import ROUTERS
    out = []
    for router in ROUTERS:
        for spec in router.specs:
            regex = compile_path(spec.path)[0]
            for m in sorted(spec.methods):
                out.append(_Route(m, regex, router, spec))
    return out


class InProcessErp:
    """The agent API over the builder's open database, with one token per user."""

    def __init__(self, builder, tokens: dict[str, str], world: dict[str, Any] | None = None) -> None:
        self.builder = builder
        self.db = builder.db
        self.tokens = tokens
        self.world = World(world or {})
        self.app = SimpleNamespace(state=SimpleNamespace(db=self.db, world=self.world, token_cache={}))
        self._routes = _routes()
        self._templates: dict[tuple[str, str], tuple[_Route, dict[str, str]]] = {}
        self.requests = 0

    def close(self) -> None:
        """Nothing to release (kept for callers written against the HTTP driver)."""

    # --- dispatch
    def _match(self, method: str, path: str) -> tuple[_Route, dict[str, str]]:
        for r in self._routes:
            if r.method != method:
                continue
            m = r.regex.match(path)
            if m:
                conv = r.route.param_convertors
                return r, {k: conv[k].convert(v) if k in conv else v for k, v in m.groupdict().items()}
        raise GenerationError(f"{method} {path}: no such route", status=404, code="no_route")

    @staticmethod
    def _validate(field_, value: Any, where: str, method: str, path: str) -> Any:
        out, errors = field_.validate(value, {}, loc=(where, field_.name))
        if errors:
            first = errors[0]
            raise GenerationError(f"{method} {path} -> 422: {where}.{field_.name}: {first.get('msg')}",
                                  status=422, code="invalid")
        return out

    def _kwargs(self, r: _Route, request: _Request, path_params: dict[str, str], body: Any,
                params: dict[str, Any], actor, method: str, path: str) -> dict[str, Any]:
        d = r.route.dependant
        kw: dict[str, Any] = {}
        for f in d.path_params:
            kw[f.name] = self._validate(f, path_params[f.alias], "path", method, path)
        for f in d.query_params:
            if f.alias in params:
                kw[f.name] = self._validate(f, params[f.alias], "query", method, path)
            elif f.field_info.is_required():
                raise GenerationError(f"{method} {path} -> 422: query.{f.alias} is required", status=422)
            else:
                kw[f.name] = f.get_default()
        for f in d.body_params:
            if body is None and not f.field_info.is_required():
                kw[f.name] = f.get_default()
            else:
                kw[f.name] = self._validate(f, body, "body", method, path)
        if d.request_param_name:
            kw[d.request_param_name] = request
        for dep in d.dependencies:
            name = getattr(dep.call, "__name__", "")
            if dep.name is None:  # a sub-dependency without a parameter of its own: none of ours
                raise GenerationError(f"{method} {path}: unsupported dependency {name}")
            # The driver's request stands in for starlette's (it has what Api reads).
            req: Any = request
            if name == "page_params":
                kw[dep.name] = PageRequest(offset=int(params.get("offset", 0)),
                                           limit=int(params.get("limit", DEFAULT_LIMIT)))
            elif name == "write_api":
                kw[dep.name] = Api(req, actor, body=body, idem_key=None, action=r.route.operation_id or "read",
                                   permission=r.permission)
            elif name == "read_api":
                kw[dep.name] = Api(req, actor)
            else:  # a dependency this driver does not know would silently change behaviour
                raise GenerationError(f"{method} {path}: unsupported dependency {name}")
        return kw

    def _actor(self, user: str):
        actor = resolve_token(self.db, self.app.state.token_cache, self.tokens[user])
        if actor is None:
            raise GenerationError(f"no valid token for {user}")
        return actor

    def call(self, user: str, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One request as `user`; returns `data` or raises GenerationError with the problem."""
        method = method.upper()
        params = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in params.items() if v is not None}
        # The body a client sends is JSON: round-trip it so dates, decimals and tuples arrive as
        # they would over the wire (and the audit row records the same request text).
        body = json.loads(json.dumps(body, default=str)) if body is not None else None
        r, path_params = self._match(method, path)
        request = _Request(app=self.app, method=method, url=_Url(path), query_params=params)
        actor = self._actor(user)
        self.requests += 1
        try:
            kwargs = self._kwargs(r, request, path_params, body, params, actor, method, path)
            response = r.route.endpoint(**kwargs)
        except Problem as exc:
            raise GenerationError(f"{user} {method} {path} -> {exc.status}: {exc.code}: {exc.detail}",
                                  status=exc.status, code=exc.code) from None
        if response.status_code >= 400:
            raise GenerationError(f"{user} {method} {path} -> {response.status_code}: {response.body[:400]!r}",
                                  status=response.status_code)
        return json.loads(response.body)["data"]

    def get(self, user: str, path: str, **params: Any) -> Any:
        """GET as `user`."""
        return self.call(user, "GET", path, **params)

    def post(self, user: str, path: str, body: Any = None) -> Any:
        """POST as `user`."""
        return self.call(user, "POST", path, body)

    def each(self, user: str, path: str, **params: Any):
        """Every item of a paginated list, page by page."""
        offset = 0
        while True:
            page = self.get(user, path, offset=offset, limit=1000, **params)
            yield from page["items"]
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return

    def advance(self, to: str) -> list[dict[str, Any]]:
        """Move the business date to `to` with the counterparties acting (sim.advance)."""
        return self.builder.advance(to, self.world)

