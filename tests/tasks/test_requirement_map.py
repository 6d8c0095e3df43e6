"""The requirement map beside the clause registry (tasks/requirements.py) and the pack standard
(tasks/lint.py): what the lint refuses, what it counts, and that every benchmark pack is clean."""
from __future__ import annotations

import textwrap

import pytest

from orchestrator.grading.rules import known_rules
from tasks import handbook
from tasks.lint import standard_problems
from tasks.registry import list_tasks, load_task
from tests.support.grading_fixtures import REQUIREMENTS_YAML, write_pack

RULES = known_rules()


def _errors(tmp_path, requirements: str) -> list[str]:
    write_pack(tmp_path, requirements=textwrap.dedent(requirements))
    return handbook.lint("tiny", RULES, tmp_path).errors


def test_the_tiny_map_is_clean_and_counted(tmp_path):
    write_pack(tmp_path)
    rep = handbook.lint("tiny", RULES, tmp_path)
    assert rep.errors == []
    assert (rep.coverage.observed, rep.coverage.stated) == (2, 2)
    assert any("requirements observed 2/2" in n for n in rep.notes)


def test_a_requirement_with_a_reason_counts_as_stated_not_observed(tmp_path):
    errs = _errors(tmp_path, REQUIREMENTS_YAML + "  - {id: b, states: say why, reason: 'not observable: free text'}\n")
    assert errs == []
    rep = handbook.lint("tiny", RULES, tmp_path)
    assert (rep.coverage.observed, rep.coverage.stated) == (2, 3)
    assert rep.coverage.unobserved == ["PAY-2.1(b): not observable: free text"]


@pytest.mark.parametrize("text, expect", [
    # neither observed nor given a reason
    ("PAY-1.1:\n  - {id: a, states: keep the floor}\nPAY-2.1:\n  - {id: a, states: no held, rules: [pay_held_invoice]}\n",
     "neither observed"),
    # observed and excused at once
    ("PAY-1.1:\n  - {id: a, states: keep the floor, checks: [payments set], reason: why}\n", "observed (checks/rules/erp) and a reason"),
    # a check that does not exist
    (REQUIREMENTS_YAML.replace("checks: [payments set]", "checks: [payments made]"), "names check 'payments made' that does not exist"),
    # a check that exists but does not cite the clause
    (REQUIREMENTS_YAML.replace("checks: [payments set]", "checks: [no held invoice paid]"), "does not cite PAY-1.1"),
    # an audit rule that does not exist
    (REQUIREMENTS_YAML.replace("rules: [pay_held_invoice]", "rules: [pay_held_invoices]"), "names audit rule 'pay_held_invoices' that does not exist"),
    # a real rule no check of the pack runs
    (REQUIREMENTS_YAML.replace("rules: [pay_held_invoice]", "rules: [foreign_token]"), "that no check of the pack runs"),
    # a clause left out of the map
    ("PAY-1.1:\n  - {id: a, states: keep the floor, checks: [payments set]}\n", "clause PAY-2.1 is not mapped"),
    # a clause the registry does not have
    (REQUIREMENTS_YAML + "PAY-9.9:\n  - {id: a, states: x y z, erp: refused}\n", "PAY-9.9: no such clause"),
    # duplicate requirement ids
    (REQUIREMENTS_YAML + "  - {id: a, states: again, erp: refused}\n", "duplicate requirement id"),
])
def test_the_lint_refuses(tmp_path, text, expect):
    errs = _errors(tmp_path, text)
    assert any(expect in e for e in errs), errs


def test_a_pack_without_a_map_fails_the_lint(tmp_path):
    d = write_pack(tmp_path)
    (d / "requirements.yaml").unlink()
    errs = handbook.lint("tiny", RULES, tmp_path).errors
    assert any("PAY-1.1 is not mapped" in e for e in errs) and any("PAY-2.1 is not mapped" in e for e in errs)


def test_the_map_is_grader_side_the_handbook_does_not_change(tmp_path):
    write_pack(tmp_path)
    before = handbook.render("tiny", tmp_path)
    (tmp_path / "tiny" / "requirements.yaml").write_text(
        REQUIREMENTS_YAML + "  - {id: b, states: a new requirement, reason: not observed}\n")
    assert handbook.render("tiny", tmp_path) == before
    assert handbook.check("tiny", tmp_path) == []


@pytest.mark.parametrize("slug", list_tasks())
def test_every_benchmark_pack_maps_every_requirement(slug):
    rep = handbook.lint(slug, RULES)
    assert rep.errors == []
    assert rep.coverage.stated >= len(load_task(slug).checks) // 3  # a map, not a stub
    assert rep.coverage.observed + len(rep.coverage.unobserved) == rep.coverage.stated


@pytest.mark.parametrize("slug", list_tasks())
def test_every_benchmark_pack_meets_the_standard(slug):
    assert standard_problems(load_task(slug)) == []


def test_the_standard_names_what_a_writing_pack_lacks(tmp_path):
    write_pack(tmp_path)  # the tiny pack writes and carries none of the three
    probs = standard_problems(load_task("tiny", tmp_path))
    assert len(probs) == 3
    assert any("foreign_token" in p for p in probs)
    assert any("ledger_ties" in p for p in probs) and any("state_unchanged" in p for p in probs)


def test_a_read_only_pack_needs_write_attempted_and_foreign_token_only(tmp_path):
    task = textwrap.dedent("""\
        id: tiny
        version: 1
        band: analyst
        title: A read-only pack
        agent_user: hannah
        start_date: 2026-10-08
        grading_date: 2026-10-13
        turns:
          - {date: 2026-10-08, from_user: priya, request: Explain the margin., budget_s: 60}
        checks:
          - {name: no write attempted, type: audit_forbidden, rule: write_attempted, cites: [PAY-2.1]}
        """)
    write_pack(tmp_path, task=task, render=False)
    probs = standard_problems(load_task("tiny", tmp_path))
    assert len(probs) == 1 and "foreign_token" in probs[0]
