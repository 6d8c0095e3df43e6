"""A live docker attempt of an `mcp` cell: from inside the agent container, a real MCP client
(the MCP SDK's, agent_sandbox.mcp_client) lists the tools and calls a read and a write through
the attempt's MCP server (its own container from the ERP image, on the attempt network only,
reached as erp-mcp); the same write and a refused write are also sent over plain HTTP. On the
host: the control API is absent from the tool list, the MCP write's audit row equals its HTTP
twin's, the refused write's tool error carries the problem's code and detail, and nothing of
the attempt is left behind."""
from __future__ import annotations

import json
import textwrap
import uuid

import pytest
from runtime_support import (
    TEST_CAMPAIGN,
    docker_client,
    fake_scenario,
    kill_during_turn,
    remove_campaign,
    resolve_images,
)

pytestmark = [pytest.mark.docker]

PROBE = textwrap.dedent('''
    import json, os
    from agent_sandbox.client import ErpClient, ErpError
    from agent_sandbox.mcp_client import McpSession, result_json, result_text

    NOTE = {"to": "controller", "subject": "Twin note", "body": "Sent twice, two ways."}

    def probe(turn, client, workspace, context):
        out = {"mcp_url": os.environ["ERP_MCP_URL"], "policy_client_whoami": client.whoami()["id"]}
        with McpSession(os.environ["ERP_MCP_URL"], os.environ["ERP_TOKEN"]) as s:
            tools = s.list_tools()
            out["tools"] = sorted(t.name for t in tools)
            out["paths"] = sorted({str((t.meta or {}).get("http", {}).get("path", "")) for t in tools})
            out["read"] = result_json(s.call_tool("read_whoami", {}))["data"]["id"]
            w = s.call_tool("msg_send", {**NOTE, "Idempotency-Key": "twin-mcp"})
            out["write"] = {"error": w.is_error, "id": None if w.is_error else result_json(w)["data"]["id"]}
            r = s.call_tool("pay_approve", {"run_id": "PR-0001"})
            out["refused_mcp"] = json.loads(result_text(r)) if r.is_error else None
        http = ErpClient(os.environ["ERP_URL"], os.environ["ERP_TOKEN"])
        http.post("/outbox", NOTE, key="twin-http")
        try:
            http.post("/payment-runs/PR-0001/approve", {})
            out["refused_http"] = None
        except ErpError as exc:
            out["refused_http"] = {"status": exc.status, "code": exc.code, "detail": exc.detail}
        print(json.dumps(out))

    POLICIES = {"neg:mcp-probe": probe}
''')


@pytest.fixture(scope="module")
def client():
    return docker_client()


@pytest.fixture(scope="module")
def images(request, client):
    return resolve_images(request)


def _comparable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("id", "wall_time", "idem_key", "object_id", "after", "before")}


def test_mcp_client_inside_the_agent_container(tmp_path, client, images):
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"{TEST_CAMPAIGN}-mcp-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    scenario, task = fake_scenario(tmp_path / "scenario", turns=1, budget_s=300)
    task.policies_module.write_text(PROBE)
    try:
        res = run_attempt(AttemptSpec(parse_cell("neg:mcp-probe:fake#mcp"), 0), backend=DockerBackend(cfg, client=client),
                          config=cfg, scenario=scenario, task=task, grade=False)
        out_dir = res.paths.turn_dir(1) / "out"
        assert res.result.turns and res.result.turns[0].exit_code == 0, (out_dir / "stderr.txt").read_text()[-3000:]
        got = json.loads((out_dir / "stdout.txt").read_text().strip().splitlines()[-1])
        assert got["mcp_url"] == "http://erp-mcp:8091/mcp"
        user = scenario.meta["agent_user"]
        assert got["read"] == user and got["policy_client_whoami"] == user
        assert len(got["tools"]) > 100 and "pay_approve" in got["tools"]
        assert not any(p.startswith("/control") for p in got["paths"]) and not any("control" in t for t in got["tools"])
        assert got["write"]["error"] is False
        mcp_problem, http_problem = got["refused_mcp"], got["refused_http"]
        assert mcp_problem and http_problem
        assert (mcp_problem["status"], mcp_problem["code"], mcp_problem["detail"]) == \
            (http_problem["status"], http_problem["code"], http_problem["detail"])
        rows = [json.loads(line) for line in res.paths.audit_jsonl.read_text().splitlines() if line.strip()]
        agent_rows = [r for r in rows if r["channel"] == "api"]
        writes = [r for r in agent_rows if r["path"] == "/outbox" and r["method"] == "POST"]
        assert [r["idem_key"] for r in writes] == ["twin-mcp", "twin-http"]
        assert _comparable(writes[0]) == _comparable(writes[1]) and writes[0]["actor"] == user
        refusals = [r for r in agent_rows if r["path"] == "/payment-runs/PR-0001/approve"]
        assert len(refusals) == 2 and _comparable(refusals[0]) == _comparable(refusals[1])
        assert refusals[0]["error_code"] == mcp_problem["code"]
        assert json.loads(res.paths.result_json.read_text())["interface"] == "mcp"
        assert (res.paths.root / "logs" / "mcp.log").is_file()
    finally:
        left = remove_campaign(client, campaign)
    assert not left, f"left behind: {left}"


def test_an_mcp_server_killed_mid_turn_is_infra_error(tmp_path, client, images):
    """The engine kills the MCP server while turn 1 runs: checked after the turn like the ERP,
    the attempt is the infrastructure's failure (the engine's kill is in its events), and the
    agent's next turn does not meet a dead MCP server."""
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"{TEST_CAMPAIGN}-mcpkill-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    scenario, task = fake_scenario(tmp_path / "scenario", turns=2, budget_s=120)
    t, killed = kill_during_turn(client, campaign, "mcp")
    try:
        res = run_attempt(AttemptSpec(parse_cell("neg:nap:fake#mcp"), 0), backend=DockerBackend(cfg, client=client),
                          config=cfg, scenario=scenario, task=task, grade=False)
        t.join(5)
        rec = res.record
        assert killed, "the test never saw the MCP server while turn 1 ran"
        assert rec["outcome"] == "infra_error", rec
        assert rec["error"]["phase"] == "turn" and rec["error"]["exception"] == "ServiceUnhealthy", rec["error"]
        assert "'mcp'" in rec["error"]["message"] and len(rec["turns"]) == 1
    finally:
        left = remove_campaign(client, campaign)
    assert not left, f"left behind: {left}"
