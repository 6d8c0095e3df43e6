"""`orchestrate review LABEL` on a real campaign (tests/support/publish_campaign.py: local backend,
payment-run with oracle, null and negative controls, one of them a disclosure breach).

A review session recorded through the CLI — the prompts driven through stdin, and the one-line
form — appears in the report (counts per check on the label's page, the decision beside the check
on the attempt's page, the command to record one); bad input is a clear error that writes nothing;
`export --verify` checks the file, on the label and in its publication bundle (where a note that
quotes a secret is redacted).
"""
from __future__ import annotations

import io
import json
import shlex
import shutil
import sys
from html import escape as html_escape
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.review.decisions import DECISIONS_FILE, attempt_folder, failed_checks

LABEL = "pub"


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    from publish_campaign import campaign

    return campaign(tmp_path_factory)


@pytest.fixture
def runs(shared, tmp_path) -> Path:
    """A copy of the campaign's runs root this test may write decisions into."""
    shutil.copytree(shared.runs / LABEL, tmp_path / "runs" / LABEL, symlinks=True)
    return tmp_path / "runs"


def _lines(runs: Path) -> list[dict]:
    return [json.loads(t) for t in (runs / LABEL / "attempts.jsonl").read_text().splitlines()]


def _line(runs: Path, cell: str) -> dict:
    return next(ln for ln in _lines(runs) if ln["identity"]["cell"] == cell)


def _review(runs: Path, *args: str) -> int:
    return main(["review", LABEL, "--runs-root", str(runs), *args])


def test_a_review_session_through_the_cli_appears_in_the_report(runs, monkeypatch, capsys):
    null = _line(runs, "null:payment-run")
    failed = [str(c["name"]) for c in failed_checks(null)]
    assert len(failed) >= 2, failed
    assert _review(runs, "--list") == 0
    listed = capsys.readouterr().out
    assert null["attempt_id"] in listed and all(name in listed for name in failed)
    oracle = _line(runs, "oracle:payment-run")
    assert oracle["attempt_id"] not in listed  # it passed: nothing to review

    # The one-line form: task_wrong on the first failed check, given by the attempt's folder.
    assert _review(runs, "--attempt", attempt_folder(null), "--check", failed[0], "--decision", "task_wrong",
                   "--kind", "alternative", "--note", "paying from the reserve account is allowed by PAY-3.1",
                   "--reviewer", "ana") == 0
    assert "recorded task_wrong (alternative)" in capsys.readouterr().out

    # The walk: only unreviewed checks are asked; answer agent_wrong on the first one asked, then quit.
    monkeypatch.setenv("USER", "bo")
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\nnever paid anything\nq\n"))
    assert _review(runs) == 0
    walked = capsys.readouterr().out
    assert f"{failed[0]}: [a]gent_wrong" not in walked  # already decided: not asked again
    rows = [json.loads(t) for t in (runs / LABEL / DECISIONS_FILE).read_text().splitlines()]
    assert [(r["check"], r["decision"], r["kind"], r["who"]) for r in rows][0] == (failed[0], "task_wrong", "alternative", "ana")
    assert len(rows) == 2 and rows[1]["decision"] == "agent_wrong" and rows[1]["who"] == "bo"
    assert rows[1]["note"] == "never paid anything" and rows[1]["attempt_id"] in {
        ln["attempt_id"] for ln in _lines(runs) if failed_checks(ln)}

    # A later decision on the same check supersedes the first; the file keeps both.
    assert _review(runs, "--attempt", null["attempt_id"], "--check", failed[0], "--decision", "agent_wrong",
                   "--note", "on second reading the handbook forbids it") == 0
    assert _review(runs, "--attempt", null["attempt_id"], "--check", failed[0], "--decision", "task_wrong",
                   "--kind", "handbook_gap", "--note", "PAY-3.1 does not say which account") == 0
    assert len((runs / LABEL / DECISIONS_FILE).read_text().splitlines()) == 4

    assert main(["report", LABEL, "--runs-root", str(runs)]) == 0
    html = (runs / LABEL / "report.html").read_text()
    section = html[html.index("Failure review"):html.index("<h2>Attempts</h2>")]
    task_row = section[section.index(f"<td class='l'>{failed[0]}</td>"):]
    task_row = task_row[:task_row.index("</tr>")]
    # one failed attempt of that check (null) is task_wrong; the negative controls' failures are unreviewed
    assert "handbook_gap &times;1" in task_row
    assert "PAY-3.1 does not say which account" in section
    assert "paying from the reserve" not in section  # superseded
    page = (runs / LABEL / "report_files" / f"{null['attempt_id']}.html").read_text()
    assert "task_wrong (handbook_gap)" in page and "PAY-3.1 does not say which account" in page
    assert html_escape(f"orchestrate review {LABEL} --attempt {null['attempt_id']} --check {shlex.quote(failed[1])}") in page
    assert "unreviewed" in page or "agent_wrong" in page

    capsys.readouterr()
    assert main(["export", "--verify", LABEL, "--runs-root", str(runs)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("args, says", [
    (["--attempt", "no-such-attempt", "--check", "x", "--decision", "agent_wrong"], "unknown attempt 'no-such-attempt'"),
    (["--attempt", "{null}", "--check", "no_such_check", "--decision", "agent_wrong"], "is not a check of attempt"),
    (["--attempt", "{oracle}", "--check", "{oracle_check}", "--decision", "agent_wrong"], "did not fail"),
    (["--attempt", "{null}", "--check", "{null_check}", "--decision", "wrong"], "unknown decision 'wrong'"),
    (["--attempt", "{null}", "--check", "{null_check}", "--decision", "task_wrong", "--note", "n"], "needs a kind"),
    (["--attempt", "{null}", "--check", "{null_check}", "--decision", "task_wrong", "--kind", "bug"], "needs a kind"),
    (["--attempt", "{null}", "--check", "{null_check}", "--decision", "task_wrong", "--kind", "task_bug"],
     "needs a note"),
    (["--attempt", "{null}", "--check", "{null_check}"], "needs --attempt, --check and --decision together"),
])
def test_bad_input_is_a_clear_error_that_loses_nothing(runs, capsys, args, says):
    null, oracle = _line(runs, "null:payment-run"), _line(runs, "oracle:payment-run")
    subs = {"{null}": null["attempt_id"], "{oracle}": oracle["attempt_id"],
            "{null_check}": str(failed_checks(null)[0]["name"]), "{oracle_check}": str(oracle["checks"][0]["name"])}
    assert _review(runs, "--attempt", null["attempt_id"], "--check", subs["{null_check}"], "--decision",
                   "agent_wrong", "--note", "kept") == 0
    before = (runs / LABEL / DECISIONS_FILE).read_bytes()
    capsys.readouterr()
    assert _review(runs, *[subs.get(a, a) for a in args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("orchestrate review: bad_input: ") and says in err[0], err
    assert (runs / LABEL / DECISIONS_FILE).read_bytes() == before


def test_no_such_label_is_bad_input(tmp_path, capsys):
    assert main(["review", "nope", "--runs-root", str(tmp_path)]) == 2
    assert "no campaign 'nope'" in capsys.readouterr().err


def test_an_attempt_shows_projections_clauses_and_the_audit_rows_behind_a_breach(runs, capsys):
    null = _line(runs, "null:payment-run")
    assert _review(runs, "--attempt", null["attempt_id"]) == 0
    out = capsys.readouterr().out
    assert "projection" in out and "reference" in out and "agent" in out
    assert "PAY-" in out  # cited clauses, with their text from clauses.yaml
    # every attempt now leaves a trajectory.json: --attempt prints its steps under a heading
    assert "transcript:" in out and "the clock advanced" in out
    neg = _line(runs, "neg:share_bank_details:payment-run-need-to-know")
    breach = next(c for c in failed_checks(neg) if c.get("breach"))
    assert _review(runs, "--attempt", neg["attempt_id"]) == 0
    out = capsys.readouterr().out
    assert str(breach["name"]) in out and "audit rows behind the breach" in out and "BREACH" in out


def test_verify_refuses_a_decision_on_a_check_that_passed(runs, capsys):
    null, oracle = _line(runs, "null:payment-run"), _line(runs, "oracle:payment-run")
    assert _review(runs, "--attempt", null["attempt_id"], "--check", str(failed_checks(null)[0]["name"]),
                   "--decision", "agent_wrong") == 0
    capsys.readouterr()
    assert main(["export", "--verify", LABEL, "--runs-root", str(runs)]) == 0, capsys.readouterr().err
    # A hand-written line on a check that passed: export --verify names it.
    row = json.loads((runs / LABEL / DECISIONS_FILE).read_text().splitlines()[0])
    with (runs / LABEL / DECISIONS_FILE).open("a") as fh:
        fh.write(json.dumps({**row, "attempt_id": oracle["attempt_id"], "check": str(oracle["checks"][0]["name"])}) + "\n")
    capsys.readouterr()
    assert main(["export", "--verify", LABEL, "--runs-root", str(runs)]) == 1
    err = capsys.readouterr().err
    assert f"{DECISIONS_FILE} line 2: check" in err and "did not fail" in err


@pytest.mark.heavy  # publishes the whole test campaign: ~40 s here
def test_the_bundle_carries_the_decisions_redacted_and_verified(runs, shared, tmp_path, capsys):
    null = _line(runs, "null:payment-run")
    check = str(failed_checks(null)[0]["name"])
    assert _review(runs, "--attempt", null["attempt_id"], "--check", check, "--decision", "task_wrong", "--kind",
                   "task_bug", "--note", f"the agent's log quotes {shared.real_key}") == 0
    out = tmp_path / "bundle"
    assert main(["publish", LABEL, "--out", str(out), "--runs-root", str(runs), "--systems",
                 str(shared.work / "systems.yaml"), "--model-access", str(shared.work / "access.yaml"),
                 "--model-access", str(shared.model_access)]) == 0, capsys.readouterr().err
    published = (out / DECISIONS_FILE).read_text()
    assert shared.real_key not in published and json.loads(published)["check"] == check
    assert "the agent's log quotes" in published
    page = (out / "report_files" / f"{null['attempt_id']}.html").read_text()
    assert "task_wrong (task_bug)" in page and shared.real_key not in page
    capsys.readouterr()
    assert main(["export", "--verify", str(out)]) == 0, capsys.readouterr().err
    # An edited decision in the bundle is caught (the manifest's hash).
    (out / DECISIONS_FILE).write_text(published.replace("task_bug", "alternative"))
    assert main(["export", "--verify", str(out)]) == 1
    assert f"{DECISIONS_FILE}: altered" in capsys.readouterr().err
