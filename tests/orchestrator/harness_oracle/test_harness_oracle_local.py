"""The harness-oracle conversation of a pilot task, played by a shell on the local backend.

A stand-in harness (tests/support/script_shell.py) runs each scripted tool call with bash in the
workspace against the real ERP, exactly as a CLI's shell tool would. The attempt must pass every
check and end in the oracle's canonical database hash (the script says what the oracle did, all
of it); with one request (or, for the read-only margin-bridge, the answer file) left out, the
check that request serves fails and the hash differs (the control is not a tautology). The real
CLIs play the same scripts in containers (test_harness_oracle_docker.py).

The scenario comes from the shared cache, whose entries now carry the oracle's recorded run
(built with the reference, or added on first use for an entry cached before).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_paths import SUPPORT_DIR

from orchestrator.harness_oracle.conversation import conversation, script_bytes
from orchestrator.scenarios.oracle_run import OracleRun, load_oracle_run

pytestmark = pytest.mark.timeout(900)

PILOT = ["requisition-approval-queue", "procure-to-pay-week", "payment-run", "mrp-planner-week",
         "month-end-close", "margin-bridge"]
# In `make test` (CI time is tight): a two-turn task with a fraud attempt; the rest is heavy.
QUICK = {"payment-run"}
# What is left out, and the check that must then fail: the first request whose "METHOD path"
# matches (a write the check observes), or a file the oracle left (`file:NAME`).
DROPS = {
    "requisition-approval-queue": (r"POST /requisitions/[^/]+/approve$", "decisions per requisition"),
    "procure-to-pay-week": (r"POST /receipts$", "receipts and refusals"),
    "payment-run": (r"POST /vendor-bank-accounts/[^/]+/reject$", "bank changes decided"),
    "mrp-planner-week": (r"POST /planned-orders/[^/]+/release$|POST /mrp/.*release", "released orders"),
    "month-end-close": (r"POST /journal-entries$", "september close by account"),
    "margin-bridge": ("file:answer.md", "margins and change stated"),
}


def marks(slug: str) -> Any:
    return pytest.param(slug, marks=() if slug in QUICK else pytest.mark.heavy)


def oracle_of(slug: str) -> tuple[Any, OracleRun]:
    from orchestrator.scenarios.cache import ensure_scenario

    scenario = ensure_scenario(slug, 0)
    return scenario, load_oracle_run(scenario.oracle_run_dir)


def play(slug: str, scenario: Any, doc: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """One local attempt of the script-shell system playing `doc`; its result record."""
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends import make_backend
    from orchestrator.cells import Cell
    from orchestrator.config import RuntimeConfig
    from tasks.registry import load_task

    script = tmp_path / "script.json"
    script.write_bytes(script_bytes(doc))
    systems = tmp_path / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"script-shell": {"argv": [
        "python", str(SUPPORT_DIR / "script_shell.py"), "--script", str(script), "--prompt-file", "{prompt_file}"]}}}))
    config = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign="pytest-harness-oracle")
    spec = AttemptSpec(Cell("script-shell", slug), 0, label="pytest-harness-oracle", systems_file=systems)
    result = run_attempt(spec, backend=make_backend("local", config), config=config, task=load_task(slug),
                         scenario=scenario)
    return result.record


@pytest.mark.parametrize("slug", [marks(s) for s in PILOT])
def test_the_conversation_replays_the_oracle(slug: str, tmp_path: Path) -> None:
    scenario, oracle = oracle_of(slug)
    assert oracle.requests and len({r.turn for r in oracle.requests}) >= 1
    rec = play(slug, scenario, conversation(oracle, "anthropic"), tmp_path)
    assert rec["outcome"] == "graded", rec.get("error")
    failed = [c["name"] for c in rec["checks"] if not c["passed"]]
    assert rec["passed"] is True and not failed, failed
    assert rec["hashes"]["canonical_db"] == oracle.canonical_db


@pytest.mark.parametrize("slug", [marks(s) for s in PILOT])
def test_without_one_request_its_check_fails(slug: str, tmp_path: Path) -> None:
    scenario, oracle = oracle_of(slug)
    what, check = DROPS[slug]
    if what.startswith("file:"):
        name = what.removeprefix("file:")
        assert name in oracle.files
        doc = conversation(OracleRun(oracle.requests, {k: v for k, v in oracle.files.items() if k != name},
                                     oracle.canonical_db, oracle.turns), "openai")
    else:
        hits = [i for i, r in enumerate(oracle.requests) if re.search(what, f"{r.method} {r.path}")]
        assert hits, f"no request of the oracle matches {what!r}"
        doc = conversation(oracle, "openai", drop={hits[0]})
    rec = play(slug, scenario, doc, tmp_path)
    assert rec["outcome"] == "graded", rec.get("error")
    failed = {c["name"] for c in rec["checks"] if not c["passed"]}
    assert rec["passed"] is False and check in failed, failed
    if not what.startswith("file:"):
        assert rec["hashes"]["canonical_db"] != oracle.canonical_db
