"""The harness-oracle control in containers: the real CLI plays the oracle's own requests.

`make test`: Claude Code (the agent-claude image) on payment-run seed 0, two turns, through the
gateway and the fake provider playing the harness-oracle conversation: every check passes, the
whole script was asked for, the ledger's tokens are the fake's call for call, and the final
canonical hash is the oracle's.

`make test-heavy`: the same with one request left out of the script: the check it serves fails
(the control is not a tautology; make test shows it for two tasks with a local shell,
test_harness_oracle_local.py); and the control on the six pilot tasks at seed 0 for every
built-in harness (`orchestrate validate --harness-oracle claude-code,codex`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.cells import Cell
from orchestrator.harness_oracle.control import (
    FAKE_MODELS,
    HARNESS_SYSTEMS,
    harness_oracle_access,
    validate_harness_oracle,
    write_access_file,
)
from orchestrator.harness_oracle.conversation import conversation, script_bytes
from orchestrator.scenarios.oracle_run import load_oracle_run
from orchestrator.validate import CellAttempts, failed_checks

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(3600)]

PILOT = ["requisition-approval-queue", "procure-to-pay-week", "payment-run", "mrp-planner-week",
         "month-end-close", "margin-bridge"]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _explain(report) -> str:
    return "\n".join(f"{e.task} {e.control} seed {e.seed}: {e.note}" for e in report.problems)


@pytest.fixture(scope="module")
def runs(images, tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runs")


def test_claude_code_plays_the_oracle_of_payment_run(runs: Path) -> None:
    runner = CellAttempts("docker", runs, "ci-harness-oracle", model_access=write_access_file(runs / "access"))
    results: list[dict[str, Any]] = []

    def keep(*args: Any, **kwargs: Any) -> dict[str, Any]:
        results.append(runner(*args, **kwargs))
        return results[-1]

    report = validate_harness_oracle(["payment-run"], [0], ["claude-code"], run_one=keep)
    assert report.ok, _explain(report)
    assert [e.control for e in report.entries] == ["oracle run", "harness-oracle:claude-code"]
    (rec,) = results
    folder = Path(rec["_dir"])
    assert rec["system"] == "claude-code" and rec["isolation"] == "docker" and rec["passed"] is True
    # The real CLI asked for every step, and each turn's session ended on its own text answer.
    received = lines(folder / "fake-provider.jsonl")
    script = json.loads((folder / "harness-oracle-script.json").read_text())
    assert sorted({r["step"] for r in received if r["step"] is not None}) == list(range(len(script["steps"])))
    tools = [b for r in received if r["step"] is not None for m in r["body"]["messages"] if m["role"] == "user"
             and isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"]
    assert tools, "the tool results came back to the model"
    # Every request the oracle sent, sent again under the agent's token, in the same order.
    from orchestrator.scenarios.cache import ensure_scenario

    api = [(e["method"], e["path"], e["idem_key"]) for e in lines(folder / "audit.jsonl") if e["channel"] == "api"]
    oracle = load_oracle_run(ensure_scenario("payment-run", 0).oracle_run_dir)
    assert api == [(r.method, r.path, r.idem_key) for r in oracle.requests]
    assert rec["hashes"]["canonical_db"] == oracle.canonical_db
    # The ledger's tokens are the fake's, call for call.
    ledger = [r for r in lines(folder / "gateway.jsonl") if r["status"] == "ok"]
    assert [(g["input_tokens"], g["output_tokens"]) for g in ledger] == [
        (r["usage"].get("input_tokens", 0), r["usage"].get("output_tokens", 0)) for r in received if r.get("usage")]


@pytest.mark.heavy  # one docker attempt in make test (above); the local twin runs there (test_harness_oracle_local.py)
def test_without_one_request_the_check_it_serves_fails(runs: Path, tmp_path: Path) -> None:
    from orchestrator.scenarios.cache import ensure_scenario

    oracle = load_oracle_run(ensure_scenario("payment-run", 0).oracle_run_dir)
    (drop,) = [i for i, r in enumerate(oracle.requests)
               if r.method == "POST" and re.search(r"^/vendor-bank-accounts/[^/]+/reject$", r.path)]
    script = tmp_path / "script.json"
    script.write_bytes(script_bytes(conversation(oracle, "anthropic", drop={drop})))
    access = harness_oracle_access()
    access["providers"] = {"anthropic": {"fake_script": str(script), "models": [FAKE_MODELS["anthropic"]]}}
    path = tmp_path / "access.yaml"
    path.write_text(yaml.safe_dump(access))
    rec = CellAttempts("docker", runs, "ci-harness-oracle-minus-one", model_access=path)(
        Cell("claude-code", "payment-run"), 0, 1)
    assert rec["outcome"] == "graded", rec.get("error")
    assert rec["passed"] is False and "bank changes decided" in failed_checks(rec)
    assert rec["hashes"]["canonical_db"] != oracle.canonical_db


@pytest.mark.heavy  # the six pilot tasks × every built-in harness: tens of minutes on 2 cores
def test_every_harness_passes_every_pilot_task(runs: Path) -> None:
    runner = CellAttempts("docker", runs, "heavy-harness-oracle", model_access=write_access_file(runs / "heavy"))
    report = validate_harness_oracle(PILOT, [0], list(HARNESS_SYSTEMS), run_one=runner)
    assert report.ok, _explain(report)
    assert sum(e.control.startswith("harness-oracle:") for e in report.entries) == len(PILOT) * len(HARNESS_SYSTEMS)
