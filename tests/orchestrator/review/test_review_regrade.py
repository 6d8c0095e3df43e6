"""A `task_wrong` decision is the input to a new task version; the regrade of the label under that
version shows what changed (issue 33). On a copy of the shared real campaign
(tests/support/publish_campaign.py): the reviewer decides that the null attempt's `payment run
dated and funded` failure is the task's fault, the new version accepts what the check rejected
(that check only), and `regrade_label` into a new label flips exactly that check, in that attempt
and every other attempt that failed it alone — no other check of any attempt moves; the new
label's report shows the decision beside the flip.
"""
from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from orchestrator.cli import main
from orchestrator.identity import AttemptIdentity
from orchestrator.review.decisions import read

LABEL = "pub"
CHECK = "payment run dated and funded"


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    from publish_campaign import campaign

    return campaign(tmp_path_factory)


def test_a_task_wrong_decision_then_a_new_task_version_and_a_regrade_flip_exactly_that_check(shared, tmp_path):
    from orchestrator.attempt.inputs import task_info
    from orchestrator.inputs import load_inputs
    from orchestrator.regrade.rescore import regrade_label

    runs = tmp_path / "runs"
    shutil.copytree(shared.runs / LABEL, runs / LABEL, symlinks=True)
    lines = [json.loads(t) for t in (runs / LABEL / "attempts.jsonl").read_text().splitlines()]
    null = next(ln for ln in lines if ln["identity"]["cell"] == "null:payment-run")
    assert CHECK in {c["name"] for c in null["checks"] if not c["passed"]}
    assert main(["review", LABEL, "--runs-root", str(runs), "--attempt", null["attempt_id"], "--check", CHECK,
                 "--decision", "task_wrong", "--kind", "alternative", "--reviewer", "ana",
                 "--note", "a run the treasurer has not dated yet is allowed until the grading date"]) == 0
    [decision] = read(runs / LABEL)

    def new_version(ident: AttemptIdentity) -> tuple[Any, Any]:
        """The next version of the task: the decided check accepts the route it rejected."""
        inputs = load_inputs(ident.cell, ident.seed)
        task = inputs.task
        checks = [c.model_copy(update={"min_accuracy": 0.0, "must_match_keys": False}) if c.name == decision.check else c
                  for c in task.spec.checks]
        task.spec = task.spec.model_copy(update={"checks": checks})
        return task, inputs.scenario

    def versions(slugs: list[str]) -> dict[str, Any]:
        return {s: {**info, "version": f"{info['version']}.review"} for s, info in task_info(slugs).items()}

    done = regrade_label(runs, LABEL, "pub-v2", inputs=new_version, task_versions=versions)
    assert done.not_regradable == [] and done.missing == 0
    delta = json.loads((runs / "pub-v2" / "delta.json").read_text())
    moved = {(cell, name, kind) for cell, entry in delta["cells"].items()
             for name, kinds in entry["checks"].items() for kind in kinds}
    assert {name for _, name, _ in moved} == {decision.check}, moved  # no other check moved anywhere
    assert {kind for _, _, kind in moved} == {"to_pass"}, moved
    [flip] = delta["cells"]["null:payment-run"]["checks"][decision.check]["to_pass"]
    assert (flip["seed"], flip["rep"]) == (0, 1) and flip["before"]["passed"] is False and flip["after"]["passed"] is True
    new_lines = [json.loads(t) for t in (runs / "pub-v2" / "attempts.jsonl").read_text().splitlines()]
    new_null = next(ln for ln in new_lines if ln["identity"]["cell"] == "null:payment-run")
    assert new_null["identity"]["task_version"].endswith(".review")
    before = {c["name"]: c["passed"] for c in null["checks"]}
    after = {c["name"]: c["passed"] for c in new_null["checks"]}
    assert {n for n in before if before[n] != after[n]} == {decision.check}
    # The new label's report puts the decision that asked for the change beside the flip.
    assert main(["report", "pub-v2", "--runs-root", str(runs)]) == 0
    html = (runs / "pub-v2" / "report.html").read_text()
    changed = html[html.index("What the rescoring changed"):]
    assert f"task_wrong (alternative): {decision.note} (ana)" in changed
    assert main(["export", "--verify", "pub-v2", "--runs-root", str(runs)]) == 0
    assert main(["export", "--verify", LABEL, "--runs-root", str(runs)]) == 0
