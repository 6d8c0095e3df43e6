"""The review decisions file on its own (orchestrator/review/decisions.py): what a decision must be
to be recorded, which one is in force, the counts per check, and what `export --verify` finds.

The ledger lines are shaped as the ledger writes them (identity, outcome, checks with `passed`);
the end-to-end test on a real campaign is test_review_command.py.
"""
from __future__ import annotations

import json

import pytest

from orchestrator.review.decisions import (
    DECISIONS_FILE,
    ReviewError,
    append,
    counts_per_check,
    latest,
    new_decision,
    problems,
    read,
)


def _line(aid: str, rep: int, outcome: str = "graded", failed: tuple[str, ...] = ("paid_right",)) -> dict:
    checks = [{"name": n, "type": "state_set", "passed": n not in failed, "breach": False}
              for n in ("paid_right", "no_duplicate", "handoff")]
    return {"attempt_id": aid, "outcome": outcome, "passed": not failed, "checks": checks if outcome != "infra_error" else [],
            "identity": {"task": "payment-run", "system": "null", "condition": "clean", "interface": "cli",
                         "seed": 0, "rep": rep, "task_version": "3"}}


LINES = [_line("a1", 1), _line("a2", 2, failed=("paid_right", "handoff")), _line("a3", 3, failed=()),
         _line("a4", 4, outcome="infra_error"), _line("a5", 5, outcome="agent_error", failed=("handoff",))]


@pytest.mark.parametrize("attempt, check, decision, kind, note, wanted", [
    ("a1", "paid_right", "agent_wrong", None, "", None),
    ("a1", "paid_right", "agent_wrong", None, "paid the blocked vendor", None),
    ("a2", "handoff", "task_wrong", "alternative", "a table in notes.md is a handoff too", None),
    ("a2", "handoff", "task_wrong", "handbook_gap", "x", None),
    ("a5", "handoff", "task_wrong", "task_bug", "x", None),  # an agent_error's final state is graded too
    ("null__payment-run/seed-0/rep-1", "paid_right", "agent_wrong", None, "", None),  # by folder
    ("zz", "paid_right", "agent_wrong", None, "", "unknown attempt 'zz'"),
    ("a1", "no_such_check", "agent_wrong", None, "", "is not a check of attempt a1"),
    ("a1", "no_duplicate", "agent_wrong", None, "", "did not fail"),  # it passed
    ("a3", "paid_right", "agent_wrong", None, "", "did not fail"),
    ("a4", "paid_right", "agent_wrong", None, "", "is not a check"),  # not graded: no checks
    ("a1", "paid_right", "agent_right", None, "", "unknown decision 'agent_right'"),
    ("a1", "paid_right", "task_wrong", None, "why", "task_wrong needs a kind"),
    ("a1", "paid_right", "task_wrong", "whim", "why", "task_wrong needs a kind"),
    ("a1", "paid_right", "task_wrong", "alternative", "  ", "task_wrong needs a note"),
    ("a1", "paid_right", "agent_wrong", "alternative", "", "agent_wrong takes no kind"),
])
def test_a_decision_is_recorded_only_on_a_failed_check_of_a_ledger_attempt(attempt, check, decision, kind, note, wanted):
    if wanted is None:
        d = new_decision(LINES, attempt, check, decision, kind, note, who="ana")
        assert (d.check, d.decision, d.kind, d.who) == (check, decision, kind, "ana")
        assert d.attempt_id.startswith("a") and d.task == "payment-run" and d.task_version == "3"
        return
    with pytest.raises(ReviewError, match="nothing was recorded") as err:
        new_decision(LINES, attempt, check, decision, kind, note, who="ana")
    assert wanted in str(err.value)


def test_the_reviewer_defaults_to_user_and_the_time_is_utc(monkeypatch):
    monkeypatch.setenv("USER", "bo")
    d = new_decision(LINES, "a1", "paid_right", "agent_wrong", None, "")
    assert d.who == "bo" and d.when.endswith("Z") and len(d.when) == 20


def test_a_later_decision_supersedes_and_the_history_stays(tmp_path):
    first = new_decision(LINES, "a2", "handoff", "agent_wrong", None, "", who="ana", when="2026-12-01T10:00:00Z")
    second = new_decision(LINES, "a2", "handoff", "task_wrong", "alternative", "a table is fine", who="bo",
                          when="2026-12-02T10:00:00Z")
    other = new_decision(LINES, "a2", "paid_right", "agent_wrong", None, "", who="ana", when="2026-12-01T10:05:00Z")
    for d in (first, other, second):
        append(tmp_path, d)
    kept = read(tmp_path)
    assert kept == [first, other, second]
    assert len((tmp_path / DECISIONS_FILE).read_text().splitlines()) == 3
    now = latest(kept)
    assert now[("a2", "handoff")] == second and now[("a2", "paid_right")] == other
    counts = counts_per_check(LINES, kept)["payment-run"]
    # paid_right failed in a1 and a2; handoff in a2 and a5 (a4 was not graded: nothing to review)
    assert counts["paid_right"] == {"failed": 2, "agent_wrong": 1, "task_wrong": 0, "unreviewed": 1, "kinds": {}}
    assert counts["handoff"] == {"failed": 2, "agent_wrong": 0, "task_wrong": 1, "unreviewed": 1,
                                 "kinds": {"alternative": 1}}
    assert problems(tmp_path, LINES) == []


def test_verify_names_every_bad_line(tmp_path):
    good = new_decision(LINES, "a1", "paid_right", "agent_wrong", None, "", who="ana", when="2026-12-01T10:00:00Z")
    row = json.loads(good.to_line())
    bad = [
        good.to_line(),
        "{not json",
        json.dumps([1, 2]),
        json.dumps({**row, "attempt_id": "zz"}),
        json.dumps({**row, "check": "no_duplicate"}),  # passed in a1
        json.dumps({**row, "decision": "maybe"}),
        json.dumps({**row, "decision": "task_wrong", "kind": None, "note": "n"}),
        json.dumps({**row, "when": "yesterday"}),
        json.dumps({**row, "task_version": "4"}),
        json.dumps({k: v for k, v in row.items() if k != "who"}),
        json.dumps({**row, "extra": 1}),
    ]
    (tmp_path / DECISIONS_FILE).write_text("\n".join(bad))  # and no newline at the end
    found = problems(tmp_path, LINES)
    assert found[0] == f"{DECISIONS_FILE}: last line has no newline (a cut write)"
    by_line = {int(p.split(" line ")[1].split(":")[0]) for p in found[1:]}
    assert by_line == set(range(2, len(bad) + 1)), found
    text = "\n".join(found)
    for words in ("not valid JSON", "not a JSON object", "attempt 'zz' is not in the label's ledger",
                  "did not fail", "unknown decision 'maybe'", "task_wrong needs a kind", "is not a UTC time",
                  "is not the attempt's", "missing field(s) who", "unknown field(s) extra"):
        assert words in text, words
    with pytest.raises(ReviewError, match="line 2: not a decision"):
        read(tmp_path)


def test_no_file_is_no_problem_and_no_decision(tmp_path):
    assert problems(tmp_path, LINES) == [] and read(tmp_path) == []
    assert counts_per_check(LINES, [])["payment-run"]["paid_right"]["unreviewed"] == 2
