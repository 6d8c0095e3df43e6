"""The campaign-wide cost budget (orchestrator/model_limits.py: `CostBudget`): no attempt starts
that could take the campaign past it; those are not run (no ledger line, never scored as a
failure), and the summary, the report and `cost_budget.json` say so. Beside it: a budget that
is never reached holds nothing back, and a resume counts what earlier runs spent."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from campaign_support import declare, write_attempt

from orchestrator.campaign.export import export_label, planned_identities, verify_label
from orchestrator.campaign.scheduler import Scheduler
from orchestrator.identity import AttemptIdentity
from orchestrator.model_access import parse_model_access
from orchestrator.model_limits import COST_BUDGET_FILE, CostBudget
from orchestrator.report.cost_budget import cost_budget_banner


class CostlyJob:
    """Writes a graded result whose gateway figures cost `cost` dollars."""

    def __init__(self, root: Path, cost: float) -> None:
        self.root, self.cost, self.calls = root, cost, 0
        self.lock = threading.Lock()

    def __call__(self, ident: AttemptIdentity, folder: Path, cancel: threading.Event) -> dict[str, Any]:
        with self.lock:
            self.calls += 1
        write_attempt(self.root, "L", ident, folder, cost=self.cost)
        return json.loads((folder / "result.json").read_text())


def access(**extra: Any) -> Any:
    return parse_model_access({"providers": {"anthropic": {"base_url": "https://api.anthropic.com",
                                                           "models": ["claude-sonnet-4-5"]}}, **extra}, "test")


def run(tmp_path: Path, budget: CostBudget | None, cost: float, *, concurrency: int = 1) -> tuple[Any, CostlyJob]:
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0, 1, 2], 2)  # six attempts
    job = CostlyJob(tmp_path, cost)
    sched = Scheduler(runs_root=tmp_path, label="L", job=job, concurrency=concurrency, infra_retries=0,
                      cost_budget=budget)
    return sched.run(planned_identities(decl)), job


def test_the_budget_stops_new_attempts_at_the_per_attempt_cap(tmp_path: Path) -> None:
    budget = CostBudget.of(access(campaign_max_cost_usd=1.0, budget={"max_cost_usd": 0.3}))
    assert budget is not None
    result, job = run(tmp_path, budget, cost=0.25, concurrency=2)
    assert job.calls == 3  # 3 x 0.3 reserved fits in $1; a fourth could take it to $1.2
    assert result.finished == 3 and result.over_budget == 3 and result.not_started == 3
    note = json.loads((tmp_path / "L" / COST_BUDGET_FILE).read_text())
    assert note["stopped"] is True and note["not_started"] == 3
    assert note["spent_usd"] == 0.75 and "would be exceeded" in note["reason"]
    summary = export_label(tmp_path, "L")
    cell = summary["cells"]["oracle:payment-run"]
    assert (cell["planned"], cell["attempts"], cell["not_run"], cell["scored"]) == (6, 3, 3, 3)  # not failures
    assert summary["cost_budget"]["not_started"] == 3
    # The summary (with its cost-budget block) verifies; the matrix is honestly incomplete.
    assert [p.split(":")[0] for p in verify_label(tmp_path, "L").problems] == ["matrix incomplete"]
    html = cost_budget_banner(summary["cost_budget"])
    assert "Stopped by the cost budget" in html and "3 attempt(s)" in html


def test_without_a_cap_the_largest_finished_cost_is_the_estimate(tmp_path: Path) -> None:
    budget = CostBudget.of(access(campaign_max_cost_usd=1.0))
    assert budget is not None
    _result, job = run(tmp_path, budget, cost=0.3)
    # first attempt: estimate 0; then 0.3 each: 0.3+0.3, 0.6+0.3, 0.9+0.3 > 1
    assert job.calls == 3
    assert json.loads((tmp_path / "L" / COST_BUDGET_FILE).read_text())["estimate_basis"].startswith("the largest")


def test_a_budget_never_reached_holds_nothing_back(tmp_path: Path) -> None:
    budget = CostBudget.of(access(campaign_max_cost_usd=10.0, budget={"max_cost_usd": 0.5}))
    result, job = run(tmp_path, budget, cost=0.4)
    assert job.calls == 6 and result.over_budget == 0
    summary = export_label(tmp_path, "L")
    assert summary["cost_budget"]["stopped"] is False
    assert "no attempt was held back" in cost_budget_banner(summary["cost_budget"])
    assert CostBudget.of(access()) is None  # no campaign budget declared: nothing to consult


def test_a_resume_counts_what_earlier_runs_spent(tmp_path: Path) -> None:
    first = CostBudget.of(access(campaign_max_cost_usd=100.0, budget={"max_cost_usd": 0.5}))
    run(tmp_path, first, cost=0.4)  # all six run: $2.40
    for folder in sorted((tmp_path / "L").rglob("rep-2")):
        (folder / "result.json").unlink()  # three to run again
    second = CostBudget.of(access(campaign_max_cost_usd=2.3, budget={"max_cost_usd": 0.5}))
    result, job = run(tmp_path, second, cost=0.4)
    # $1.20 already spent by the three kept: 1.2+0.5 and 1.6+0.5 fit, 2.0+0.5 does not (without
    # counting the earlier spend all three would have run)
    assert job.calls == 2 and result.skipped == 3 and result.over_budget == 1
