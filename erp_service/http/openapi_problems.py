"""The problem responses of the agent API's OpenAPI document (contracts §2, issue 17).

FastAPI documents a route's success and a 422 of its own shape; the routes also answer 401,
403, 404, 409, 413 and 503, all as `application/problem+json`. This adds to every operation
each problem response it can give, with the `Problem` schema and, per status, the machine codes
(`code`) it can carry, so `erp docs`, the MCP tools generated from the document and a conformance
run (schemathesis) all see what can fail:

- every operation: 401 `unauthorized`, 403 `forbidden`, 404 `not_found` (a record the request
  names does not exist), 422 `invalid` (malformed input), 503 `storage_unavailable` /
  `service_unavailable`;
- every write: 409 with the hard controls of the route's domain (the `refused(...)` codes of the
  package that holds the route, found in its source) and `idempotency_key_reused`, and 413
  `payload_too_large`.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from .lazy_routes import built_routes

PROBLEM_MEDIA = "application/problem+json"
PROBLEM_REF = "#/components/schemas/Problem"
WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})
_REFUSED = re.compile(r"""refused\(\s*["']([a-z_]+)["']|Problem\(\s*409\s*,\s*["']([a-z_]+)["']""")

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "type": "object",
    "description": "An error answer (RFC 9457 problem details). `code` is the machine code to act on; "
                   "`detail` says in one sentence what was refused and why.",
    "properties": {
        "type": {"type": "string", "description": "https://bb-erp.dev/errors/<code>"},
        "title": {"type": "string", "description": "The code again."},
        "status": {"type": "integer", "description": "The HTTP status."},
        "code": {"type": "string", "description": "The machine code (see each response for the codes it carries)."},
        "detail": {"type": "string", "description": "One sentence: what was refused and why."},
        "context": {"type": "object", "additionalProperties": True, "description": "Facts behind the refusal, when there are some."},
        "business_date": {"type": "string", "format": "date"},
    },
    "required": ["type", "title", "status", "code", "detail"],
}

# (status, codes, description) shared by every operation, and added for writes.
COMMON: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("401", ("unauthorized",), "No valid bearer token."),
    ("403", ("forbidden",), "Your role does not allow this action or read."),
    ("404", ("not_found",), "A record the request names does not exist."),
    ("422", ("invalid",), "Malformed input: a missing or unknown field, a wrong type, a date not YYYY-MM-DD, "
                          "JSON nested deeper than 32 levels or not UTF-8."),
    ("503", ("storage_unavailable", "service_unavailable"), "The ERP cannot serve the request right now; nothing was "
                                                            "changed. Try again later (a write: with the same Idempotency-Key)."),
)
WRITES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("413", ("payload_too_large",), "The body is over 2 MiB."),
)
IDEMPOTENCY_CODES = ("idempotency_key_reused",)


def problem_response(codes: tuple[str, ...] | list[str], description: str) -> dict[str, Any]:
    """One documented problem response: the Problem schema with the codes it carries."""
    listed = ", ".join(f"`{c}`" for c in codes)
    schema = {"allOf": [{"$ref": PROBLEM_REF}, {"properties": {"code": {"enum": list(codes)}}}]}
    return {"description": f"{description} Codes: {listed}.", "content": {PROBLEM_MEDIA: {"schema": schema}}}


@cache
def domain_refusals(module_name: str) -> tuple[str, ...]:
    """The 409 codes raised in the source of the package (or module) that holds a route."""
    module = sys.modules.get(module_name)
    source = getattr(module, "__file__", None)
    if not source:
        return ()
    path = Path(source)
    files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" or _in_domain_package(module_name) else [path]
    codes: set[str] = set()
    for file in files:
        for m in _REFUSED.finditer(file.read_text(encoding="utf-8")):
            codes.add(m.group(1) or m.group(2))
    return tuple(sorted(codes))


def _in_domain_package(module_name: str) -> bool:
    """`erp_service.domains.<package>.<module>`: the whole package is the route's domain."""
    parts = module_name.split(".")
    return len(parts) >= 4 and parts[1] == "domains"


def add_problem_responses(doc: dict[str, Any], refusals_of: Callable[[str, str], tuple[str, ...]]) -> dict[str, Any]:
    """Add the problem responses to every operation of `doc` (in place; also returned).
    `refusals_of(method, path)` gives the 409 codes of a write."""
    doc.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
    for path, ops in doc.get("paths", {}).items():
        if path == "/openapi.json":
            continue
        for method, op in ops.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            responses = op["responses"]
            for status, codes, text in COMMON + (WRITES if method in WRITE_METHODS else ()):
                responses[status] = problem_response(codes, text)
            if method in WRITE_METHODS:
                codes409 = sorted(set(refusals_of(method, path)) | set(IDEMPOTENCY_CODES))
                responses["409"] = problem_response(codes409, "A hard control refused the write (nothing was changed), or the "
                                                              "Idempotency-Key was used before with another body.")
    doc.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
    doc.get("components", {}).get("schemas", {}).pop("ValidationError", None)
    return doc


def _api_routes(routes: Any) -> list[APIRoute]:
    """Every APIRoute, also inside included routers (FastAPI keeps those as wrappers)."""
    out: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            out.append(route)
        elif (inner := getattr(route, "original_router", None)) is not None:
            out += _api_routes(inner.routes)
    return out


def install_problem_docs(app: FastAPI) -> None:
    """Make `app.openapi()` (and so `GET /openapi.json`) document the problem responses."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, openapi_version=app.openapi_version,
                              description=app.description, routes=built_routes(app.routes))
            modules = {(m.lower(), r.path_format): r.endpoint.__module__ for r in _api_routes(built_routes(app.routes))
                       for m in (r.methods or ())}
            app.openapi_schema = add_problem_responses(
                doc, lambda method, path: domain_refusals(modules.get((method, path), "")))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
