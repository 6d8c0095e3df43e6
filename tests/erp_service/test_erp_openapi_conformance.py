"""A bounded schemathesis run against the agent API's own OpenAPI document (issue 17): every
operation called with generated inputs, as a user whose role allows much and as one whose role
allows little; no answer may carry a status the document does not list for the operation, a
content type it does not name, a body its schema does not allow (for a problem: a `code` outside
the codes documented for that status), or a 5xx. The document lists every problem response
with the Problem schema and its codes (erp_service/http/openapi_problems.py). A control shows
that the body check does fail on a problem code the document does not list.

Bounded: ERP_CONFORMANCE_EXAMPLES per operation (default 3)."""
from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from erp_supply_support import supply_company
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup

from erp_service.http.app import create_app
from erp_service.sim import World

EXAMPLES = int(os.environ.get("ERP_CONFORMANCE_EXAMPLES", "3"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def company(tmp_path_factory):
    return supply_company(tmp_path_factory.mktemp("conformance"))


@pytest.fixture(scope="module")
def app(company):
    return create_app(company.builder.db, World({}))


@pytest.fixture(scope="module")
def api_schema(app):
    return schemathesis.openapi.from_asgi("/openapi.json", app)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def first_failure(operation: Any, headers: list[dict[str, str]]) -> str | None:
    """One bounded hypothesis run of `operation`, each case called with each of `headers`: what
    the checks found (one line per distinct failure), or None."""

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def run(case: Any) -> None:
        for h in headers:
            case.validate_response(case.call(headers=h), checks=CHECKS)

    try:
        run()
    except FailureGroup as group:  # a BaseExceptionGroup, not an Exception
        return "; ".join(f"{f.title}: {' '.join(str(f.message).split())[:300]}" for f in group.exceptions)
    except Exception as exc:  # noqa: BLE001 — collected and reported by the caller
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None


def test_every_answer_is_documented(api_schema, company):
    # One bounded hypothesis run per operation (schemathesis' pytest plugin does not load
    # under this pytest); every failure is collected so the message lists them all.
    failures: list[str] = []
    operations = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        operations += 1
        found = first_failure(operation, [company.headers("admin"), company.headers("staff")])
        if found is not None:
            failures.append(f"{operation.label}: {found}")
    assert operations > 100
    assert not failures, f"{len(failures)} operation(s) answered outside their documentation:\n" + "\n".join(failures)


def test_a_problem_code_outside_the_documented_list_fails_the_check(company, api_schema):
    """The control of the run above: the same run, on a document whose 401 responses list
    another code, fails on the ERP's real `unauthorized` answer; on the real document it passes."""
    no_token: list[dict[str, str]] = [{}]
    assert first_failure(api_schema["/vendors"]["GET"], no_token) is None

    app = create_app(company.builder.db, World({}))
    doc = app.openapi()
    for ops in doc["paths"].values():
        for op in ops.values():
            if isinstance(op, dict) and "401" in op.get("responses", {}):
                schema = op["responses"]["401"]["content"]["application/problem+json"]["schema"]
                schema["allOf"][1]["properties"]["code"]["enum"] = ["token_missing"]
    found = first_failure(schemathesis.openapi.from_asgi("/openapi.json", app)["/vendors"]["GET"], no_token)
    assert found is not None and "violates schema" in found, found
    assert '"unauthorized" is not one of "token_missing"' in found, found


def test_problem_responses_documented(app):
    doc = app.openapi()
    assert "Problem" in doc["components"]["schemas"]
    op = doc["paths"]["/payment-runs/{run_id}/approve"]["post"]
    for status in ("401", "403", "404", "409", "413", "422", "503"):
        assert "application/problem+json" in op["responses"][status]["content"], status
    codes409 = op["responses"]["409"]["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]["code"]["enum"]
    assert {"preparer_cannot_approve", "idempotency_key_reused", "bad_status"} <= set(codes409)
    read = doc["paths"]["/vendors"]["get"]["responses"]
    assert "409" not in read and {"401", "403", "422", "503"} <= set(read)
