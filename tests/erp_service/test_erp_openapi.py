"""The agent API's OpenAPI document: every route typed (request and 2xx response schemas),
readable and unique operation ids, and a schema-driven sweep in the manner of schemathesis:
every operation called with bodies, path and query values generated from its own schemas
(valid ones and mutated ones) must never answer 5xx."""
from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any
from urllib.parse import quote

import pytest
from erp_supply_support import supply_company
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from erp_service.domains.roles import ROLES
from erp_service.http.app import create_app
from erp_service.sim import World

WRITE_METHODS = {"post", "put", "patch", "delete"}
# ~600 requests in all by default; ERP_SWEEP_EXAMPLES=50 for a deeper run.
EXAMPLES_PER_OPERATION = int(os.environ.get("ERP_SWEEP_EXAMPLES", "4"))


@pytest.fixture(scope="module")
def company(tmp_path_factory):
    return supply_company(tmp_path_factory.mktemp("openapi"))


@pytest.fixture(scope="module")
def spec(company) -> dict:
    cl = TestClient(create_app(company.builder.db, World({})))
    r = cl.get("/openapi.json")
    assert r.status_code == 200
    return r.json()


def operations(spec: dict) -> list[tuple[str, str, dict]]:
    """(method, path, operation) for every operation, in document order."""
    return [(m, p, op) for p, ops in spec["paths"].items() for m, op in ops.items()]


def resolve(spec: dict, schema: dict | None) -> dict | None:
    """Follow `$ref`s to the schema itself."""
    while schema and "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def typed(spec: dict, schema: dict | None) -> bool:
    """A schema that says what it holds: not missing, not `{}`, not a bare open object."""
    schema = resolve(spec, schema)
    if not schema:
        return False
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return all(typed(spec, s) for s in schema[key] if s.get("type") != "null")
    if "allOf" in schema:
        return all(typed(spec, s) for s in schema["allOf"])
    if schema.get("type") == "object":
        return bool(schema.get("properties")) or typed(spec, schema.get("additionalProperties") or None)
    if schema.get("type") == "array":
        return typed(spec, schema.get("items"))
    return "type" in schema or "enum" in schema or "const" in schema


# --- the document ---------------------------------------------------------------------------


def test_openapi_31_covers_every_route(company, spec):
    assert spec["openapi"].startswith("3.1")
    app = create_app(company.builder.db)
    declared = {(m, p) for m, p, _ in operations(spec)}
    for route in app.routes:
        if isinstance(route, APIRoute) and route.include_in_schema:
            for method in (route.methods or set()) - {"HEAD"}:
                assert (method.lower(), route.path_format) in declared, (method, route.path_format)
    assert len(declared) >= 126, len(declared)


def test_every_operation_has_typed_2xx_response(spec):
    untyped = []
    for method, path, op in operations(spec):
        ok = [code for code in op["responses"] if code.startswith("2")]
        assert ok, (method, path)
        content = op["responses"][ok[0]].get("content", {})
        if "application/json" in content:
            envelope = resolve(spec, content["application/json"].get("schema"))
            props = (envelope or {}).get("properties", {})
            # Every JSON answer is the envelope: the business date and typed data.
            if set(props) != {"business_date", "data"} or not typed(spec, props["data"]):
                untyped.append((method, path))
        elif not content or not all(c.get("schema", {}).get("format") == "binary" for c in content.values()):
            untyped.append((method, path))
    assert not untyped, untyped


def test_every_body_is_typed_and_closed(spec):
    bad = []
    for method, path, op in operations(spec):
        if "requestBody" not in op:
            continue
        assert method in WRITE_METHODS, (method, path)
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        variants = [resolve(spec, s) for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
        for body in (v for v in variants if v is not None):
            # Unknown fields are a 422 (`http.api.In`): the schema says so too.
            if not typed(spec, body) or (body.get("type") == "object" and body.get("additionalProperties") is not False):
                bad.append((method, path, body.get("title")))
    assert not bad, bad


def test_operation_ids_readable_unique_and_action_codes(spec):
    ids = [op["operationId"] for _, _, op in operations(spec)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    granted = {p for _, perms in ROLES.values() for p in perms}
    for method, path, op in operations(spec):
        oid = op["operationId"]
        if method == "get":
            assert oid.startswith("read_") and "__" not in oid, (path, oid)
        else:
            # A write's operation id is its action code, granted to some role.
            permission = op.get("x-permission", oid)
            assert "." in oid or oid in granted, (method, path, oid)
            assert permission in granted or "*" in granted, (method, path, permission)
        assert op.get("summary"), (method, path)
    assert "read_ap_invoices" in ids and "read_ap_invoices_by_id" in ids


# --- the sweep ------------------------------------------------------------------------------

JUNK = st.one_of(st.just(None), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False),
                 st.text(max_size=12), st.lists(st.integers(), max_size=2), st.just({"x": 1}))
DATES = st.one_of(st.dates(dt.date(2025, 1, 1), dt.date(2027, 12, 31)).map(str),
                  st.sampled_from(["2026-10-99", "2026-02-30", "2026-13-01", "10/08/2026", "", "2026-10-08T00:00"]))


def value_for(spec: dict, schema: dict | None, pools: dict[str, list[str]], name: str = "",
              depth: int = 0) -> st.SearchStrategy:
    """Values for a JSON schema: mostly conforming (ids drawn from the company's real ones for
    fields that name things), sometimes the wrong type or an impossible value."""
    schema = resolve(spec, schema) or {}
    if depth > 4:
        return st.none()
    wrong = JUNK
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), st.text(max_size=6)) if depth else st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([value_for(spec, s, pools, name, depth + 1) for s in schema[key]])
    if "allOf" in schema:
        return value_for(spec, schema["allOf"][0], pools, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([value_for(spec, {**schema, "type": k}, pools, name, depth) for k in kind])
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fields = {k: value_for(spec, s, pools, k, depth + 1) for k, s in props.items()}
        optional = sorted(set(props) - required)

        @st.composite
        def obj(draw):
            out = {k: draw(fields[k]) for k in sorted(required)}
            for k in optional:
                if draw(st.booleans()):
                    out[k] = draw(fields[k])
            mutation = draw(st.integers(0, 9))
            if mutation == 0 and out:                    # a required field missing
                out.pop(draw(st.sampled_from(sorted(out))))
            elif mutation == 1:                          # an unknown field
                out["unexpected_field"] = draw(JUNK)
            elif mutation == 2 and out:                  # a wrong type
                out[draw(st.sampled_from(sorted(out)))] = draw(wrong)
            return out
        if not props:
            return st.dictionaries(st.text(max_size=5), JUNK, max_size=2)
        return obj()
    if kind == "array":
        return st.lists(value_for(spec, schema.get("items"), pools, name, depth + 1),
                        min_size=0, max_size=min(3, schema.get("maxItems", 3)))
    if kind == "string":
        if schema.get("format") == "date":
            return DATES
        ids = pools_for(name, pools)
        base = st.text(min_size=schema.get("minLength", 0), max_size=min(24, schema.get("maxLength", 24)))
        return st.one_of(st.sampled_from(ids), base) if ids else base
    if kind == "integer":
        lo, hi = schema.get("minimum", -5), schema.get("maximum", 10**6)
        return st.one_of(st.integers(lo, min(hi, lo + 10**6)), st.integers(-10**19, 10**19))
    if kind == "number":
        return st.one_of(st.decimals(0, 100_000, places=2).map(float),
                         st.floats(allow_nan=False, allow_infinity=False), st.just(1e300))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return JUNK


def pools_for(name: str, pools: dict[str, list[str]]) -> list[str]:
    """Real ids for a field or parameter name (`vendor_id`, `vendor`, `invoice`...)."""
    key = name.removesuffix("_id").removesuffix("s")
    for pool, ids in pools.items():
        if key and (key in pool or pool in key):
            return ids
    return []


def collect_pools(cl: TestClient, headers: dict, spec: dict) -> dict[str, list[str]]:
    """Ids of what exists, per list route (`vendor` -> ["V-0101", ...])."""
    pools: dict[str, list[str]] = {}
    for method, path, _ in operations(spec):
        if method != "get" or "{" in path:
            continue
        r = cl.get(path, headers=headers)
        data = r.json().get("data") if r.status_code == 200 else None
        items = data.get("items") if isinstance(data, dict) else data if isinstance(data, list) else None
        ids = [str(i["id"]) for i in (items or []) if isinstance(i, dict) and "id" in i][:20]
        if ids:
            pools[path.strip("/").split("/")[-1].replace("-", "_").removesuffix("s")] = ids
    return pools


@pytest.mark.timeout(120)
def test_schema_sweep_never_5xx(company, spec):
    """Every operation, called with generated path values, queries and bodies, answers < 500."""
    db = company.builder.db
    cl = TestClient(create_app(db, World({})), raise_server_exceptions=False)
    users = sorted(company.tokens)
    pools = collect_pools(cl, company.headers("admin"), spec)
    ops = operations(spec)

    def sweep(method: str, path: str, op: dict) -> None:
        # One small hypothesis run per operation keeps each example's draw small (a single run
        # over all operations overruns hypothesis's buffer and retries far more requests).
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def one(data):
            user = data.draw(st.sampled_from(users + ["admin"] * 4), label="user")
            url = path
            query: dict[str, Any] = {}
            for param in op.get("parameters", []):
                val = data.draw(value_for(spec, param.get("schema"), pools, param["name"], depth=1), label=param["name"])
                if param["in"] == "path":
                    text = "x" if val is None or val == "" else str(val)
                    url = url.replace("{" + param["name"] + "}", quote(text, safe=""))
                elif param["in"] == "query" and val is not None and data.draw(st.booleans()):
                    query[param["name"]] = val if not isinstance(val, (dict, list)) else json.dumps(val)
            kwargs: dict[str, Any] = {"params": query, "headers": company.headers(user)}
            if "requestBody" in op:
                schema = op["requestBody"]["content"]["application/json"]["schema"]
                if data.draw(st.integers(0, 15)) == 0:
                    kwargs["content"] = b'{"truncated": '
                    kwargs["headers"] = {**kwargs["headers"], "content-type": "application/json"}
                else:
                    kwargs["json"] = data.draw(value_for(spec, schema, pools), label="body")
            r = cl.request(method.upper(), url, **kwargs)
            assert r.status_code < 500, (method, url, kwargs.get("json"), r.text[:400])
            if r.status_code >= 400:
                assert r.headers["content-type"].startswith("application/problem+json"), (method, url, r.text)
                assert r.json().get("code"), r.text

        one()

    for method, path, op in ops:
        sweep(method, path, op)


# --- strict dates -------------------------------------------------------------------------------

TIMESTAMP = 1796083200   # 2026-12-01 as a Unix timestamp: the lax date type took it as a date


def _is_date(spec: dict, schema: dict | None) -> bool:
    schema = resolve(spec, schema) or {}
    if schema.get("format") == "date":
        return True
    return any(_is_date(spec, s) for s in schema.get("anyOf", []) + schema.get("oneOf", []))


def _date_paths(spec: dict, schema: dict | None, path: tuple = (), depth: int = 0) -> list[tuple]:
    """Paths (keys, with 0 for an array item) of every date field of a request schema."""
    schema = resolve(spec, schema) or {}
    if depth > 6:
        return []
    if _is_date(spec, schema):
        return [path]
    found: list[tuple] = []
    for sub in schema.get("anyOf", []) + schema.get("oneOf", []) + schema.get("allOf", []):
        if (resolve(spec, sub) or {}).get("type") != "null":
            found += _date_paths(spec, sub, path, depth + 1)
    if schema.get("type") == "array" or "items" in schema:
        found += _date_paths(spec, schema.get("items"), path + (0,), depth + 1)
    for name, prop in (schema.get("properties") or {}).items():
        found += _date_paths(spec, prop, path + (name,), depth + 1)
    return found


def _nest(path: tuple, value: Any) -> Any:
    for key in reversed(path):
        value = [value] if key == 0 else {key: value}
    return value


def test_every_date_in_a_request_is_an_iso_string_only(company, spec):
    """Every date a request carries (query parameter or body field, at any depth) refuses a
    Unix timestamp: the field's own validation error says YYYY-MM-DD (kernel.dates.IsoDate)."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    app = create_app(company.builder.db, World({}))

    async def all_errors(request, exc):   # every error, not the first one the API reports
        return JSONResponse({"errors": [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]},
                            status_code=422)

    app.exception_handlers[RequestValidationError] = all_errors
    cl = TestClient(app)
    token = company.tokens[sorted(company.tokens)[0]]
    lax: list[str] = []
    checked = 0
    for method, path, op in operations(spec):
        url = path.replace("{", "").replace("}", "")   # any id: validation comes before lookup
        cases: list[tuple[str, dict, Any]] = []
        for param in op.get("parameters", []):
            if param.get("in") == "query" and _is_date(spec, param.get("schema")):
                cases.append((f"query {param['name']}", {param["name"]: str(TIMESTAMP)}, None))
        body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json", {}).get("schema")
        for where in _date_paths(spec, body):
            cases.append(("body " + ".".join(map(str, where)), {}, _nest(where, TIMESTAMP)))
        for label, query, payload in cases:
            checked += 1
            r = cl.request(method.upper(), url, params=query, json=payload,
                           headers={"Authorization": f"Bearer {token}"})
            errors = r.json().get("errors", []) if r.status_code == 422 else []
            name = label.split(" ", 1)[1].split(".")[-1]
            if not any(str(e.get("loc", [""])[-1]) == name and "YYYY-MM-DD" in e.get("msg", "") for e in errors):
                lax.append(f"{method.upper()} {path} {label}: {r.status_code}")
    assert checked >= 20, checked
    assert not lax, "dates that are not IsoDate:\n" + "\n".join(lax)
