"""Domain routes declared at import, built into FastAPI routes only when first needed.

A domain module declares its routes with the usual decorators on a `DomainRouter`
(``@router.get("/vendors", response_model=...)``). FastAPI would build each `APIRoute` right
there — read the endpoint's signature, make a pydantic field for every parameter, the body and
the response — which was about half of importing the domains, paid by everything that imports
them: the ERP at every start, and a scenario generator that needs the tables and a dozen
routes. A `DomainRouter` only records what was declared (`RouteSpec`); the route is built from
the record by `DomainRouter.build`, with the same options FastAPI would have merged in:

- the agent app (`erp_service.http.app.create_app`) puts one `LazyRouteGroup` holding a
  `LazyRoute` per declaration into its route list (`mount`); a request builds the route it
  matches, the first time, and `/openapi.json` builds them all (`built_routes`);
- the in-process driver of the generators builds only the routes it calls.

The built route is FastAPI's own `APIRoute`, so validation, serialisation, dependencies and the
OpenAPI document are FastAPI's, unchanged; a `LazyRoute` matches exactly when its route does
(the same path regex, then the route's own `matches`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fastapi.routing import APIRoute, APIRouter
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, NoMatchFound, compile_path
from starlette.types import Receive, Scope, Send


@dataclass(frozen=True)
class RouteSpec:
    """One route as its decorator declared it: path, endpoint and the decorator's options."""

    path: str
    endpoint: Callable[..., Any]
    options: dict[str, Any] = field(hash=False)

    @property
    def methods(self) -> frozenset[str]:
        """The HTTP methods, upper case (FastAPI's default: GET)."""
        return frozenset(m.upper() for m in self.options.get("methods") or ("GET",))

    @property
    def permission(self) -> str | None:
        """The permission the route declares (``x-permission`` in its OpenAPI extra), if any."""
        return (self.options.get("openapi_extra") or {}).get("x-permission")


class DomainRouter(APIRouter):
    """A domain's routes, recorded by the decorators, built on demand (`build`)."""

    def __init__(self, *, tags: list[str]) -> None:
        super().__init__(tags=list(tags))
        self.specs: list[RouteSpec] = []

    def add_api_route(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        """Record the route (what the decorators call); nothing is built here."""
        self.specs.append(RouteSpec(path, endpoint, options))

    def build(self, spec: RouteSpec, parent: APIRouter | None = None) -> APIRoute:
        """The `APIRoute` of one declaration, with the options `parent` (the app's router) would
        merge in when including this router: its tags, dependencies, responses, response class,
        operation-id function and dependency overrides. No parent: FastAPI's defaults."""
        base = parent if parent is not None else APIRouter()
        host = APIRouter(tags=[*base.tags, *self.tags], dependencies=[*base.dependencies, *self.dependencies],
                         responses={**base.responses, **self.responses},
                         default_response_class=base.default_response_class,
                         generate_unique_id_function=base.generate_unique_id_function,
                         dependency_overrides_provider=base.dependency_overrides_provider,
                         route_class=base.route_class)
        APIRouter.add_api_route(host, spec.path, spec.endpoint, **spec.options)
        route = host.routes[-1]
        assert isinstance(route, APIRoute)
        return route


class LazyRoute(BaseRoute):
    """One declared route in an app's route list; built into its `APIRoute` at its first match.

    Not built, it answers `Match.NONE` for any path its regex rejects (the route itself would);
    otherwise the built route decides (FULL, or PARTIAL for another method) and handles."""

    def __init__(self, router: DomainRouter, spec: RouteSpec, parent: APIRouter) -> None:
        self.router, self.spec, self.parent = router, spec, parent
        self.path = spec.path
        self.path_regex, self.path_format, self.param_convertors = compile_path(spec.path)
        # Every path the regex matches starts with the text before the first parameter: a string
        # test turns away the other hundred-odd routes a request is tried against, cheaper than the regex.
        self.literal_prefix = spec.path.split("{", 1)[0]
        self._route: APIRoute | None = None

    def built(self) -> APIRoute:
        """The route, built the first time. (The app runs on one event loop: no lock; two
        threads building at once would only build it twice.)"""
        if self._route is None:
            self._route = self.router.build(self.spec, self.parent)
        return self._route

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        path = get_route_path(scope)
        if not path.startswith(self.literal_prefix) or self.path_regex.match(path) is None:
            return Match.NONE, {}
        return self.built().matches(scope)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.built().handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        return self.built().url_path_for(name, **path_params)


def _first_segment(path: str) -> str:
    return path.split("/", 2)[1] if path.startswith("/") else ""


class LazyRouteGroup(BaseRoute):
    """The declared routes as one entry of the app's route list, found through an index on the
    first path segment.

    The router tries its routes one by one, and a request was tried against all ~140 domain
    routes before reaching a late one (a tenth of a typical write's time). The group answers as
    the routes would in sequence: a request is tried only against the routes whose first segment
    is the path's (``/ap-invoices/7`` → those under ``ap-invoices``) and those that start with a
    parameter, in declaration order; the first full match wins, else the first partial one (a
    known path with another method: 405). Only declared segments are keys of the index."""

    def __init__(self, routes: list[LazyRoute]) -> None:
        self.routes = routes
        wildcard = [r for r in routes if "{" in _first_segment(r.path)]
        self._wildcard = tuple(wildcard)
        buckets: dict[str, list[LazyRoute]] = {}
        for route in routes:
            if route not in wildcard:
                buckets.setdefault(_first_segment(route.path), []).append(route)
        order = {id(r): n for n, r in enumerate(routes)}
        self._index = {key: tuple(sorted([*found, *wildcard], key=lambda r: order[id(r)]))
                       for key, found in buckets.items()}

    def candidates(self, path: str) -> tuple[LazyRoute, ...]:
        """The routes that can match `path`, in declaration order."""
        return self._index.get(_first_segment(path), self._wildcard)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        partial: tuple[Match, Scope] | None = None
        for route in self.candidates(get_route_path(scope)):
            match, child = route.matches(scope)
            if match == Match.FULL:
                return match, {**child, _CHOSEN: route}
            if match == Match.PARTIAL and partial is None:
                partial = (match, {**child, _CHOSEN: route})
        return partial or (Match.NONE, {})

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await scope[_CHOSEN].handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        for route in self.routes:
            try:
                return route.url_path_for(name, **path_params)
            except NoMatchFound:
                continue
        raise NoMatchFound(name, path_params)


#: Where `LazyRouteGroup.matches` leaves the route its `handle` passes the request to.
_CHOSEN = "pb.lazy_route"


def mount(parent: APIRouter, routers: Iterable[DomainRouter]) -> None:
    """Append every declared route of `routers`, in order, to `parent` (the app's router), as one
    `LazyRouteGroup`."""
    parent.routes.append(LazyRouteGroup([LazyRoute(router, spec, parent) for router in routers
                                         for spec in router.specs]))


def lazy_routes(routes: Iterable[BaseRoute]) -> list[LazyRoute]:
    """Every `LazyRoute` of a route list (inside its groups), in order."""
    out: list[LazyRoute] = []
    for route in routes:
        if isinstance(route, LazyRouteGroup):
            out += route.routes
        elif isinstance(route, LazyRoute):
            out.append(route)
    return out


def built_routes(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """`routes` with every `LazyRoute` (also inside a group) replaced by its built route, in
    place (what OpenAPI reads)."""
    out: list[BaseRoute] = []
    for route in routes:
        if isinstance(route, LazyRouteGroup):
            out += [r.built() for r in route.routes]
        else:
            out.append(route.built() if isinstance(route, LazyRoute) else route)
    return out
