"""`orchestrate review LABEL`: a review session driven through the CLI (answers on stdin) records
one decision per failed check in the append-only reviews.jsonl (who, when, why), the report
summarises them, and decisions on anything but a failed check of a scored attempt are refused."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from campaign_support import declare, write_attempt

from orchestrator.campaign.export import export_label, planned_identities
from orchestrator.cli import main
from orchestrator.review.decisions import REVIEWS_FILE, ReviewError, failed_checks, read_decisions, record_decision

FAILED = "paid_right_invoices"
BREACH = "no_duplicate_payment"


@pytest.fixture
def label(tmp_path: Path) -> tuple[Path, str]:
    """oracle passes twice; null fails `paid_right_invoices` twice, the second time with a breach;
    one more null attempt is an infra error (not scored: nothing to review)."""
    decl = declare(tmp_path, "rv", ["oracle:payment-run", "null:payment-run"], [0], 3)
    for ident in planned_identities(decl):
        if ident.system == "oracle":
            write_attempt(tmp_path, "rv", ident)
        elif ident.rep == 3:
            write_attempt(tmp_path, "rv", ident, outcome="infra_error", passed=False,
                          error={"phase": "open", "kind": "infra_error", "message": "engine gone"})
        else:
            write_attempt(tmp_path, "rv", ident, passed=False, breach=ident.rep == 2)
    export_label(tmp_path, "rv")
    return tmp_path, "rv"


def test_the_failed_checks_are_those_of_scored_attempts(label):
    runs, name = label
    found = [(f.cell, f.rep, f.check, f.breach) for f in failed_checks(runs, name)]
    assert found == [("null:payment-run", 1, FAILED, False), ("null:payment-run", 2, FAILED, False),
                     ("null:payment-run", 2, BREACH, True)]


def test_a_review_session_through_the_cli_is_recorded_and_reported(label, monkeypatch, capsys):
    runs, name = label
    # three failed checks: task_wrong with a note, agent_wrong with a note, then quit
    monkeypatch.setattr("sys.stdin", io.StringIO("t\nthe handbook allows paying it next week\na\npaid the wrong vendor\nq\n"))
    assert main(["review", name, "--by", "ana", "--runs-root", str(runs)]) == 0
    printed = capsys.readouterr().out
    assert "detail:" in printed and FAILED in printed
    decisions = read_decisions(runs / name)
    assert [(d.check, d.decision, d.note, d.reviewer) for d in decisions] == [
        (FAILED, "task_wrong", "the handbook allows paying it next week", "ana"),
        (FAILED, "agent_wrong", "paid the wrong vendor", "ana")]
    assert all(d.at.endswith("+00:00") for d in decisions)
    first = (runs / name / REVIEWS_FILE).read_text()
    # a second session starts where the first stopped and only appends
    monkeypatch.setattr("sys.stdin", io.StringIO("a\nduplicate payment is the agent's\n"))
    assert main(["review", name, "--by", "bo", "--runs-root", str(runs)]) == 0
    text = (runs / name / REVIEWS_FILE).read_text()
    assert text.startswith(first) and len(text.splitlines()) == 3
    assert read_decisions(runs / name)[-1].check == BREACH
    # the report summarises the decisions, task_wrong with its note, who and when
    assert main(["report", name, "--runs-root", str(runs)]) == 0
    html = (runs / name / "report.html").read_text()
    assert "Failure review" in html and "the handbook allows paying it next week" in html and "(ana, " in html
    assert f"payment-run: {FAILED}</td><td>2</td><td>1</td><td>1</td><td>0</td>" in html


def test_one_decision_from_the_flags_and_what_is_refused(label, capsys):
    runs, name = label
    null_1 = next(f.attempt_id for f in failed_checks(runs, name) if f.rep == 1)
    oracle = next(f.attempt_id for f in planned_identities(json.loads((runs / name / "campaign.json").read_text()))
                  if f.system == "oracle")
    assert main(["review", name, "--attempt", null_1, "--check", FAILED, "--decision", "task_wrong",
                 "--note", "an acceptable alternative", "--by", "cy", "--runs-root", str(runs)]) == 0
    # a check that passed, a check of an unscored attempt, no note, an unknown decision: refused
    with pytest.raises(ReviewError, match="not a failed check"):
        record_decision(runs, name, attempt_id=oracle, check=FAILED, decision="task_wrong", note="x", reviewer="cy")
    infra = null_1.replace(".r1.", ".r3.")
    with pytest.raises(ReviewError, match="not a failed check"):
        record_decision(runs, name, attempt_id=infra, check=FAILED, decision="task_wrong", note="x", reviewer="cy")
    with pytest.raises(ReviewError, match="needs a note"):
        record_decision(runs, name, attempt_id=null_1, check=FAILED, decision="agent_wrong", note=" ", reviewer="cy")
    with pytest.raises(ReviewError, match="use one of"):
        record_decision(runs, name, attempt_id=null_1, check=FAILED, decision="maybe", note="x", reviewer="cy")
    assert main(["review", name, "--attempt", oracle, "--check", FAILED, "--decision", "agent_wrong",
                 "--note", "x", "--runs-root", str(runs)]) == 2
    assert len(read_decisions(runs / name)) == 1
    assert main(["review", name, "--list", "--runs-root", str(runs)]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # rich wraps at the terminal's width
    assert f"payment-run: {FAILED}: 2 failed, 0 agent_wrong, 1 task_wrong, 1 undecided" in printed
