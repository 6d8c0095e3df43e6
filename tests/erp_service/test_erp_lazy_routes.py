"""Routes are declared at import and built when first needed (erp_service/http/lazy_routes.py).

Pins the lazy loading: importing the world and the generators' path builds no FastAPI route and
loads neither the app nor the server; the app builds a route at its first request only; and the
lazily built app is FastAPI's eager one (same OpenAPI document, same route settings)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fastapi import APIRouter
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from repo_paths import REPO_ROOT

from erp_service.domains import ROUTERS
from erp_service.http.app import create_app
from erp_service.http.lazy_routes import LazyRoute, LazyRouteGroup, lazy_routes
from erp_service.setup import CompanyBuilder

#: Counts the APIRoutes built while importing what a scenario generator imports.
IMPORT_PROBE = """
import json, sys
from fastapi import routing
built = []
_init = routing.APIRoute.__init__
def counting(self, path, *a, **k):
    built.append(path)
    _init(self, path, *a, **k)
routing.APIRoute.__init__ = counting
import erp_service.world, tasks.generate, tasks.northgate.history_cache
from erp_service.domains import ROUTERS
print(json.dumps({"built": built, "declared": sum(len(r.specs) for r in ROUTERS),
                  "modules": sorted(m for m in sys.modules if m in ("erp_service.http.app", "erp_service.server",
                                                                  "uvicorn", "erp_service.http.control"))}))
"""


def test_world_and_generation_imports_build_no_route() -> None:
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], cwd=REPO_ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    got = json.loads(out.stdout)
    assert got["declared"] > 100  # every domain declared its routes ...
    assert got["built"] == []  # ... and none was built
    assert got["modules"] == []  # the HTTP app, its server and uvicorn are not loaded at all


def _app(tmp_path: Path):
    builder = CompanyBuilder.create(tmp_path / "erp.db", business_date="2026-01-05", name="Lazy Routes Co.")
    return create_app(builder.db)


def test_app_builds_a_route_at_its_first_request_only(tmp_path: Path) -> None:
    app = _app(tmp_path)
    lazy = lazy_routes(app.router.routes)
    assert len(lazy) == sum(len(r.specs) for r in ROUTERS)
    assert not any(r._route is not None for r in lazy)
    with TestClient(app) as client:
        r = client.get("/vendors")  # no token: refused, but by the route's own dependency
    assert r.status_code == 401
    built = {(tuple(sorted(r.spec.methods)), r.path) for r in lazy if r._route is not None}
    assert built == {(("GET",), "/vendors")}


def _effective_routes(app) -> list[APIRoute]:
    """The routes as FastAPI's request handling sees them (an included router's effective
    context per route; a lazy route's built route)."""
    out = []
    for route in app.router.routes:
        if hasattr(route, "effective_candidates"):
            out += route.effective_candidates()
        elif isinstance(route, LazyRouteGroup):
            out += [r.built() for r in route.routes]
        elif isinstance(route, LazyRoute):
            out.append(route.built())
    return out


def _settings(route) -> dict:
    return {"path": route.path, "methods": sorted(route.methods), "operation_id": route.operation_id,
            "unique_id": route.unique_id, "response_class": route.response_class.__name__,
            "tags": list(route.tags), "status_code": route.status_code, "response_model": repr(route.response_model),
            "dependencies": [getattr(d.dependency, "__name__", "") for d in route.dependencies],
            "query": [f.alias for f in route.dependant.query_params],
            "body": [f.alias for f in route.dependant.body_params], "extra": route.openapi_extra}


def test_lazy_app_equals_fastapis_eager_include(tmp_path: Path) -> None:
    lazy_app = _app(tmp_path)
    eager_app = create_app(lazy_app.state.db)
    # The same declarations, built at once and included the way FastAPI does it.
    eager_app.router.routes[:] = [r for r in eager_app.router.routes if not isinstance(r, LazyRouteGroup)]
    for domain in ROUTERS:
        plain = APIRouter(tags=list(domain.tags))
        for spec in domain.specs:
            APIRouter.add_api_route(plain, spec.path, spec.endpoint, **spec.options)
        eager_app.include_router(plain)
    eager, lazy = _effective_routes(eager_app), _effective_routes(lazy_app)
    assert len(eager) == len(lazy) > 100
    assert [_settings(r) for r in lazy] == [_settings(r) for r in eager]
    assert lazy_app.openapi() == eager_app.openapi()
