"""Handbook render / check / lint, with planted defects."""
from __future__ import annotations

import textwrap

import pytest
from grading_fixtures import CLAUSES_YAML, TASK_YAML, write_pack

from tasks import handbook
from tasks.packs import PackError

RULES = ["pay_held_invoice", "duplicate_effect"]


def test_render_format(tmp_path):
    write_pack(tmp_path)
    files = handbook.render("tiny", tmp_path)
    assert list(files) == ["payments.md"]
    assert files["payments.md"] == (
        "# Payments\n\nHow we pay vendors.\n\n## Runs\n\n"
        "**PAY-1.1** Keep the operating account above $50,000.00.\n\n## Holds\n\n"
        "**PAY-2.1** Never pay an invoice on hold; see PAY-1.1.\n"
    )


def test_format_spec_and_literal_braces(tmp_path):
    pol = CLAUSES_YAML.replace('floor: "$50,000.00"', "floor: 50000").replace(
        "above {floor}.", "above ${floor:,.2f} {{not a param}}.")
    write_pack(tmp_path, policies=pol)
    assert "above $50,000.00 {not a param}." in handbook.render("tiny", tmp_path)["payments.md"]


def test_check_clean_then_detects_edit_missing_and_stray(tmp_path):
    d = write_pack(tmp_path)
    assert handbook.check("tiny", tmp_path) == []
    (d / "handbook" / "payments.md").write_text("edited\n")
    (d / "handbook" / "extra.md").write_text("x\n")
    probs = handbook.check("tiny", tmp_path)
    assert any("payments.md: differs" in p for p in probs)
    assert any("extra.md: not produced by clauses.yaml" in p for p in probs)
    (d / "handbook" / "payments.md").unlink()
    assert any("payments.md: missing" in p for p in handbook.check("tiny", tmp_path))


def test_check_is_byte_exact(tmp_path):
    d = write_pack(tmp_path)
    p = d / "handbook" / "payments.md"
    p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    assert handbook.check("tiny", tmp_path)


def test_lint_clean(tmp_path):
    write_pack(tmp_path)
    rep = handbook.lint("tiny", RULES, tmp_path)
    assert rep.errors == []
    assert rep.unenforced == []


def test_lint_planted_defects(tmp_path):
    extra_checks = (
        "  - name: dups\n    type: audit_forbidden\n    rule: duplicate_effect\n    cites: [PAY-1.1]\n"
        "  - name: made up\n    type: audit_forbidden\n    rule: no_such_rule\n    cites: [PAY-2.1]\n"
    )
    task = (TASK_YAML.format(slug="tiny").replace("cites: [PAY-1.1]", "cites: [PAY-9.9]")
            .replace("negative_controls:", extra_checks + "negative_controls:"))
    pol = CLAUSES_YAML.replace("binds: [pay_held_invoice]", "binds: [pay_held_invoice, ghost_rule]")
    pol = pol.replace("see PAY-1.1.", "see PAY-7.") .replace('  floor: "$50,000.00"', '  floor: "$50,000.00"\n  unused: 3')
    pol += ("  - id: PAY-3.1\n    file: payments.md\n    text: Pay within {terms}.\n"
            "  - id: PAY-3.1\n    file: payments.md\n    text: Twice placed.\n")
    write_pack(tmp_path, task=task, policies=pol, render=False)
    rep = handbook.lint("tiny", RULES, tmp_path)
    text = "\n".join(rep.errors)
    assert "check 'payments set' cites missing clause(s) ['PAY-9.9']" in text
    assert "check 'dups' runs rule 'duplicate_effect' that none of its cited clauses binds" in text
    assert "check 'made up' runs unknown rule 'no_such_rule'" in text
    assert "clause PAY-2.1 binds unknown rule 'ghost_rule'" in text
    assert "clause PAY-2.1 refers to missing clause PAY-7" in text
    assert "clause PAY-3.1 placed 2 times" in text
    assert "clause PAY-3.1 uses undefined parameter(s) ['terms']" in text
    assert "unused parameter(s) ['unused']" in text
    # Report-only: clauses no check enforces.
    assert "PAY-3.1" in rep.unenforced
    assert any("clauses no check enforces" in n for n in rep.notes)


def test_render_undefined_param_is_an_error(tmp_path):
    write_pack(tmp_path, policies=CLAUSES_YAML.replace("{floor}", "{flor}"), render=False)
    with pytest.raises(PackError, match=r"clauses.PAY-1.1.text: undefined parameter\(s\) \['flor'\]"):
        handbook.render("tiny", tmp_path)


def test_variant_renders_parent_files_too_and_checks(tmp_path):
    write_pack(tmp_path)
    child_task = TASK_YAML.format(slug="child").replace("title:", "variant_of: tiny\ntitle:")
    child_pol = textwrap.dedent("""\
        extends: tiny
        params: {controller: Priya Raman}
        files:
          infoflow.md: {title: Information flow}
        clauses:
          - {id: INF-1.1, file: infoflow.md, text: "Refer requests for bank details to {controller}."}
        """)
    write_pack(tmp_path, "child", task=child_task, policies=child_pol, projections=None,
               requirements="INF-1.1:\n  - {id: a, states: refer requests to the controller, reason: not observed here}\n")
    files = handbook.render("child", tmp_path)
    assert set(files) == {"payments.md", "infoflow.md"}
    assert files["payments.md"] == handbook.render("tiny", tmp_path)["payments.md"]
    assert handbook.check("child", tmp_path) == []
    rep = handbook.lint("child", RULES, tmp_path)
    assert rep.errors == [] and rep.unenforced == ["INF-1.1"]


def test_problems_wraps_pack_errors(tmp_path):
    write_pack(tmp_path, policies=CLAUSES_YAML.replace("{floor}", "{flor}"), render=False)
    probs = handbook.problems("tiny", RULES, tmp_path)
    assert len(probs) == 1 and "undefined parameter" in probs[0]


def test_cli_render_check_lint(tmp_path, monkeypatch, capsys):
    from orchestrator.cli import main

    monkeypatch.setenv("PB_TASKS_ROOT", str(tmp_path))
    d = write_pack(tmp_path, render=False)
    assert main(["handbook", "check", "tiny"]) == 1
    assert main(["handbook", "render"]) == 0
    assert main(["handbook", "check"]) == 0
    assert main(["handbook", "lint", "tiny"]) == 0
    (d / "handbook" / "payments.md").write_text("hand edited\n")
    assert main(["handbook", "check", "tiny"]) == 1
    out = capsys.readouterr().out
    assert "payments.md: differs from the rendered text" in out and "lint clean" in out


def test_lint_bold_id_inside_another_clause(tmp_path):
    write_pack(tmp_path, policies=CLAUSES_YAML.replace("see PAY-1.1.", "see **PAY-1.1**."))
    errors = handbook.lint("tiny", RULES, tmp_path).errors
    assert any("clause PAY-1.1 appears 2 times as **PAY-1.1**" in e for e in errors)
