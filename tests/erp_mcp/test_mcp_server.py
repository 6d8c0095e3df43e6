"""The MCP server against a real ERP (payment-run seed 0), through the MCP SDK's own client:
the tools are the agent API's operations (names = operation ids, schemas and problem responses
from the document) and never the control API; a read and a write through MCP leave the same
audit rows as their HTTP twins; a refused write comes back as a tool error holding the
problem's code and detail; without the agent's token nothing is served."""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from erp_server import start_server
from mcp_server import scenario_db_copy, start_mcp

from agent_sandbox.mcp_client import McpSession, result_json, result_text
from orchestrator.scenarios.cache import ensure_scenario

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp")
    scenario = ensure_scenario("payment-run", 0)
    world = json.loads(Path(scenario.world).read_text())
    erp = start_server(tmp, scenario_db_copy(scenario, tmp), world=world)
    mcp = start_mcp(erp.ready["agent"])
    token = scenario.meta["agent_token"]
    session = McpSession(mcp.url, token)
    yield erp, mcp, session, token
    session.close()
    mcp.stop()
    erp.stop()


def _audit(erp, after: int) -> list[dict]:
    return erp.control.get("/control/audit", params={"after": after, "limit": 1000}).json()["items"]


def _last_id(erp) -> int:
    return max([r["id"] for r in _audit(erp, 0)] or [0])


def _comparable(row: dict) -> dict:
    """An audit row without what differs between two sends of the same request."""
    return {k: v for k, v in row.items() if k not in ("id", "wall_time", "idem_key", "object_id", "after", "before")}


def test_tools_are_the_agent_operations_and_never_control(stack):
    erp, _mcp, session, _token = stack
    doc = erp.agent.get("/openapi.json").json()
    op_ids = {op["operationId"] for p, ops in doc["paths"].items() for op in ops.values() if p != "/openapi.json"}
    tools = session.list_tools()
    names = {t.name for t in tools}
    assert names == {op.replace(".", "_") for op in op_ids}
    assert {(t.meta or {})["http"]["operation_id"] for t in tools} == op_ids
    assert not any("control" in t.name for t in tools)
    assert not any(str((t.meta or {}).get("http", {}).get("path", "")).startswith("/control") for t in tools)
    approve = next(t for t in tools if t.name == "pay_approve")
    assert approve.description and "preparer_cannot_approve" in approve.description  # the problem responses
    assert "run_id" in approve.input_schema["properties"] and "Idempotency-Key" in approve.input_schema["properties"]


def test_read_and_write_audited_like_http(stack):
    erp, _mcp, session, token = stack
    start = _last_id(erp)
    got = result_json(session.call_tool("read_vendors_by_id", {"vendor_id": "V-0101"}))
    assert got["data"]["id"] == "V-0101"
    body = {"to": "controller", "subject": "Through MCP", "body": "A note."}
    sent = session.call_tool("msg_send", {**body, "Idempotency-Key": "mcp-write-1"})
    assert not sent.is_error, result_text(sent)
    mcp_rows = _audit(erp, start)
    mid = max(r["id"] for r in mcp_rows)
    headers = {"Authorization": f"Bearer {token}"}
    assert erp.agent.get("/vendors/V-0101", headers=headers).status_code == 200
    assert erp.agent.post("/outbox", json=body, headers={**headers, "Idempotency-Key": "http-write-1"}).status_code == 201
    http_rows = _audit(erp, mid)
    assert [_comparable(r) for r in mcp_rows] == [_comparable(r) for r in http_rows]
    assert len(mcp_rows) == 2 and mcp_rows[0]["action"] == "read" and mcp_rows[1]["method"] == "POST"
    assert mcp_rows[-1]["idem_key"] == "mcp-write-1" and mcp_rows[-1]["outcome"] == "ok"


def test_refused_write_returns_the_problem(stack):
    erp, _mcp, session, token = stack
    start = _last_id(erp)
    result = session.call_tool("pay_approve", {"run_id": "PR-10019"})
    assert result.is_error
    problem = json.loads(result_text(result))
    headers = {"Authorization": f"Bearer {token}"}
    twin = erp.agent.post("/payment-runs/PR-10019/approve", json={}, headers=headers)
    assert problem["status"] == twin.status_code and problem["code"] == twin.json()["code"] and problem["detail"] == twin.json()["detail"]
    assert problem["status"] in (403, 404, 409) and problem["code"] and problem["detail"]
    rows = _audit(erp, start)
    assert len(rows) == 2 and _comparable(rows[0]) == _comparable(rows[1]) and rows[0]["outcome"] in ("refused", "invalid")


def test_no_token_no_service(stack):
    _erp, mcp, _session, _token = stack
    r = httpx.post(mcp.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Accept": "application/json, text/event-stream"}, timeout=30, trust_env=False)
    assert r.status_code == 401
    assert httpx.get(mcp.ready["mcp"] + "/health", timeout=30, trust_env=False).json()["ok"] is True
