"""payment-run seed 0 by the oracle through the MCP server (a real MCP SDK client, every call a
tool) against the same through HTTP, on the local backend: both pass, the final canonical hashes
are equal, the records name the interface, and every agent request of the MCP run is in the
audit log as the HTTP run's is (same actions, same outcomes, same idempotency keys)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.attempt import AttemptSpec, run_attempt
from orchestrator.backends.local import LocalBackend
from orchestrator.cells import parse_cell
from orchestrator.config import RuntimeConfig
from orchestrator.inputs import load_inputs

pytestmark = pytest.mark.heavy  # make test-heavy (CI time); the MCP docker tests stay in make test


def _run(cell_text: str, tmp: Path):
    cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", scratch_root=tmp / "scratch", campaign="pb-test-mcp")
    cell = parse_cell(cell_text)
    inputs = load_inputs(cell, 0)
    return run_attempt(AttemptSpec(cell=cell, seed=0, label="mcp-test"), backend=LocalBackend(cfg),
                       task=inputs.task, scenario=inputs.scenario, root=cfg.runs_root, config=cfg)


def _agent_rows(path: Path) -> list[tuple]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["method"], r["path"], r["action"], r["outcome"], r["status"], r["error_code"], r["idem_key"],
             json.dumps(r["request"], sort_keys=True))
            for r in rows if r["channel"] == "api"]


def test_oracle_through_mcp_equals_http(tmp_path: Path) -> None:
    http = _run("oracle:payment-run", tmp_path / "http")
    mcp = _run("oracle:payment-run#mcp", tmp_path / "mcp")
    for res in (http, mcp):
        assert res.outcome == "graded", res.error
        assert res.passed, [c for c in res.result.checks if not c.get("passed")]
    assert mcp.result.hashes.canonical_db == http.result.hashes.canonical_db
    assert json.loads(mcp.paths.attempt_json.read_text())["interface"] == "mcp"
    assert json.loads(mcp.paths.result_json.read_text())["interface"] == "mcp"
    assert json.loads(http.paths.result_json.read_text())["interface"] == "cli"
    assert mcp.paths.root != http.paths.root and mcp.paths.root.parent.parent.name.endswith("__if-mcp")
    assert "MCP server `bb-erp`" in (mcp.paths.turn_dir(1) / "prompt.txt").read_text()
    assert "MCP" not in (http.paths.turn_dir(1) / "prompt.txt").read_text()
    rows_mcp, rows_http = _agent_rows(mcp.paths.audit_jsonl), _agent_rows(http.paths.audit_jsonl)
    assert rows_mcp and rows_mcp == rows_http
    assert (mcp.paths.root / "logs" / "mcp.log").is_file()
