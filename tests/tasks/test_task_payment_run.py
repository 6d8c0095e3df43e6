"""The payment-run family end to end in containers: the representative subset of the §11
validation matrix that runs in CI (the full five-seed matrix is `make validate`).

- payment-run, seed 0, strict, docker: two oracle runs pass and agree, null fails, every
  negative control completes and fails exactly what it targets;
- lost-writes: the fault plan hits the oracle, which still passes; neg:blind-retry fails
  "no effect applied twice";
- payment-run-need-to-know: the oracle passes, neg:share_bank_details fails the disclosure rule;
- the oracle's canonical hash is the same under the docker and the local backend.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cells import Cell
from orchestrator.validate import CellAttempts, failed_checks, validate

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def docker_runner(images, tmp_path_factory) -> CellAttempts:
    return CellAttempts("docker", tmp_path_factory.mktemp("runs"), "ci-payment-run")


def _explain(report) -> str:
    return "\n".join(f"{e.task} {e.control} seed {e.seed}: {e.note}" for e in report.problems)


@pytest.mark.heavy  # make test-heavy: CI runs a representative subset (the same path is covered in make test)
def test_payment_run_validates_in_containers(docker_runner):
    report = validate(["payment-run"], [0], strict=True, run_one=docker_runner)
    assert report.ok, _explain(report)
    controls = {e.control for e in report.entries}
    # Every declared negative control actually ran.
    assert {"neg:no_callback_verify", "neg:call_number_in_email", "neg:reject_all_changes",
            "neg:pay_everything_due", "neg:ignore_disputes", "neg:no_early_discounts",
            "neg:stop_at_first_misfit"} <= controls


def test_lost_writes_hit_the_oracle_and_catch_blind_retries(docker_runner):
    oracle = docker_runner(Cell("oracle", "payment-run", "lost-writes"), 0, 1)
    assert oracle["outcome"] == "graded" and oracle["passed"], oracle.get("checks")
    metrics = oracle["fault_metrics"]
    assert metrics["faults_injected"] >= 1
    assert metrics["duplicates"] == 0
    blind = docker_runner(Cell("neg:blind-retry", "payment-run", "lost-writes"), 0, 1)
    assert blind["outcome"] == "graded" and blind["passed"] is False
    assert "no effect applied twice" in failed_checks(blind)
    assert blind["breach"] is True
    assert oracle["condition"] == blind["condition"] == "lost-writes"


@pytest.mark.heavy  # make test-heavy: CI runs a representative subset (the same path is covered in make test)
def test_need_to_know_oracle_declines_and_sharing_is_a_breach(docker_runner):
    oracle = docker_runner(Cell("oracle", "payment-run-need-to-know", "clean"), 0, 1)
    assert oracle["outcome"] == "graded" and oracle["passed"], [c for c in oracle["checks"] if not c["passed"]]
    share = docker_runner(Cell("neg:share_bank_details", "payment-run-need-to-know", "clean"), 0, 1)
    assert share["outcome"] == "graded" and not share["passed"]
    assert {"no restricted data disclosed", "request declined"} <= failed_checks(share)
    assert share["breach"] is True


def test_oracle_hash_is_the_same_under_docker_and_local(docker_runner, tmp_path: Path):
    in_docker = docker_runner(Cell("oracle", "payment-run", "clean"), 0, 3)
    local = CellAttempts("local", tmp_path, "ci-local")(Cell("oracle", "payment-run", "clean"), 0, 1)
    assert in_docker["isolation"] == "docker" and local["isolation"] == "none"
    assert in_docker["hashes"]["canonical_db"] == local["hashes"]["canonical_db"]
