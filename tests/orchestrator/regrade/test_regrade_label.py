"""`orchestrate regrade LABEL --as NEW`: a real local campaign (the oracle and the negative control
that dates the run late, on payment-run seed 0) is rescored after its `payment run dated and
funded` check is loosened (made optional): the new label lists exactly that attempt and check as flipped, the
source label's files stay byte-identical, and `export --verify` passes on both. Also: an
unchanged rescoring through the CLI flips nothing, an attempt the new version cannot grade is
listed (never guessed), and a taken name or a tampered source is refused."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.campaign.export import verify_label
from orchestrator.cli import main
from orchestrator.identity import AttemptIdentity
from orchestrator.regrade.rescore import RegradeError, regrade_label

pytestmark = pytest.mark.heavy  # one local campaign of two attempts and four rescorings: ~1.5 min here

SOURCE = "src"
LOOSENED = "payment run dated and funded"
NEG = "neg:run_dated_late:payment-run"
ORACLE = "oracle:payment-run"


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _loosened(ident: AttemptIdentity) -> tuple[Any, Any]:
    """This checkout's pack and scenario, with the LOOSENED check made optional."""
    from orchestrator.inputs import load_inputs

    inputs = load_inputs(ident.cell, ident.seed)
    task = inputs.task
    checks = [c.model_copy(update={"required": False}) if c.name == LOOSENED else c for c in task.spec.checks]
    task.spec = task.spec.model_copy(update={"checks": checks})
    return task, inputs.scenario


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("regrade") / "runs"
    rc = main(["campaign", "--backend", "local", "--cells", f"{ORACLE},{NEG}", "--seeds", "0", "--label", SOURCE,
               "--runs-root", str(runs)])
    assert rc in (0, 1), rc
    lines = [json.loads(t) for t in (runs / SOURCE / "attempts.jsonl").read_text().splitlines()]
    verdicts = {ln["identity"]["cell"]: (ln["outcome"], ln["passed"],
                                         sorted(c["name"] for c in ln["checks"] if not c["passed"])) for ln in lines}
    assert verdicts == {ORACLE: ("graded", True, []), NEG: ("graded", False, [LOOSENED])}, verdicts
    return runs


def test_a_loosened_check_flips_exactly_that_attempt_and_the_source_is_untouched(runs: Path):
    before = _tree(runs / SOURCE)
    done = regrade_label(runs, SOURCE, "loose", inputs=_loosened)
    assert _tree(runs / SOURCE) == before  # byte-identical, every file
    assert (done.regraded, done.copied, done.not_regradable, done.missing) == (2, [], [], 0)
    delta = json.loads((runs / "loose" / "delta.json").read_text())
    # one verdict flipped; the check is now optional in both attempts, so both list it
    assert delta["flipped_attempts"] == 1 and delta["flipped_checks"] == 2
    neg = delta["cells"][NEG]
    assert neg["verdicts"] == {"to_pass": 1, "to_fail": 0, "unchanged": 0}
    assert list(neg["checks"]) == [LOOSENED] and list(neg["checks"][LOOSENED]) == ["now_optional"]
    [flip] = neg["checks"][LOOSENED]["now_optional"]
    assert (flip["seed"], flip["rep"]) == (0, 1)
    assert flip["before"]["passed"] is False and flip["before"]["required"] is True
    assert flip["after"]["passed"] is False and flip["after"]["required"] is False
    assert flip["before"]["detail"] and flip["after"]["detail"]  # why, before and after
    oracle = delta["cells"][ORACLE]
    assert oracle["verdicts"] == {"to_pass": 0, "to_fail": 0, "unchanged": 1}
    assert list(oracle["checks"]) == [LOOSENED]
    [same] = oracle["checks"][LOOSENED]["now_optional"]
    assert same["before"]["passed"] is True and same["after"]["passed"] is True
    # the new label is a label: it verifies, and so does the source
    assert verify_label(runs, SOURCE).ok and verify_label(runs, "loose").ok
    assert main(["export", "--verify", "loose", "--runs-root", str(runs)]) == 0
    assert main(["export", "--verify", SOURCE, "--runs-root", str(runs)]) == 0
    # marked as a rescoring wherever it is read, with where it came from
    src_ledger = hashlib.sha256((runs / SOURCE / "attempts.jsonl").read_bytes()).hexdigest()
    summary = json.loads((runs / "loose" / "summary.json").read_text())
    assert summary["rescoring"]["source_label"] == SOURCE
    assert summary["rescoring"]["source_ledger_sha256"] == src_ledger
    assert summary["cells"][NEG]["pass_at_1"] == 1.0
    assert json.loads((runs / SOURCE / "summary.json").read_text())["cells"][NEG]["pass_at_1"] == 0.0
    decl = json.loads((runs / "loose" / "campaign.json").read_text())
    assert decl["rescoring"]["tasks"]["payment-run"]["before"]["version"] == decl["tasks"]["payment-run"]["version"]
    assert decl["rescoring"]["sources_before"] is not None
    # a rescoring is never resumed as a fresh campaign under its name
    assert main(["campaign", "--backend", "local", "--cells", f"{ORACLE},{NEG}", "--seeds", "0", "--label", "loose",
                 "--runs-root", str(runs)]) == 2
    assert main(["report", "loose", "--runs-root", str(runs)]) == 0
    html = (runs / "loose" / "report.html").read_text()
    assert "<h1>Rescoring loose</h1>" in html and "What the rescoring changed" in html and LOOSENED in html
    # its publication bundle carries the delta, bound by the manifest, and shows it in its report
    bundle = runs.parent / "bundle-loose"
    assert main(["publish", "loose", "--runs-root", str(runs), "--out", str(bundle)]) == 0
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert "delta.json" in json.dumps(manifest)
    assert json.loads((bundle / "delta.json").read_text())["flipped_attempts"] == 1
    assert "What the rescoring changed" in (bundle / "report.html").read_text()
    assert main(["export", "--verify", str(bundle)]) == 0
    (bundle / "delta.json").write_text((bundle / "delta.json").read_text().replace('"flipped_attempts": 1', '"flipped_attempts": 0'))
    assert main(["export", "--verify", str(bundle)]) != 0  # the delta is hash-bound like every file


def test_an_unchanged_rescoring_through_the_cli_flips_nothing(runs: Path):
    assert main(["regrade", SOURCE, "--as", "same", "--runs-root", str(runs)]) == 0
    delta = json.loads((runs / "same" / "delta.json").read_text())
    assert (delta["regraded"], delta["flipped_attempts"], delta["flipped_checks"]) == (2, 0, 0)
    old = {json.loads(t)["identity"]["cell"]: json.loads(t) for t in (runs / SOURCE / "attempts.jsonl").read_text().splitlines()}
    new = {json.loads(t)["identity"]["cell"]: json.loads(t) for t in (runs / "same" / "attempts.jsonl").read_text().splitlines()}
    assert {c: (ln["passed"], ln["checks"]) for c, ln in old.items()} == {c: (ln["passed"], ln["checks"]) for c, ln in new.items()}
    assert verify_label(runs, "same").ok
    # the name is taken now
    with pytest.raises(RegradeError, match="exists"):
        regrade_label(runs, SOURCE, "same")


def test_an_attempt_the_new_version_cannot_grade_is_listed_not_guessed(runs: Path):
    def fails_for_the_control(ident: AttemptIdentity) -> tuple[Any, Any]:
        if ident.system.startswith("neg:"):
            raise KeyError("projection over table 'payment_holds' that the old scenario lacks")
        return _loosened(ident)

    done = regrade_label(runs, SOURCE, "partial", inputs=fails_for_the_control)
    assert done.regraded == 1 and [x["attempt_id"].split(".")[0] for x in done.not_regradable] == ["neg-run_dated_late__payment-run"]
    assert "payment_holds" in done.not_regradable[0]["reason"]
    cell = json.loads((runs / "partial" / "summary.json").read_text())["cells"][NEG]
    assert (cell["scored"], cell["excluded"], cell["task_errors"], cell["pass_at_1"]) == (0, 1, 1, None)
    assert verify_label(runs, "partial").ok


def test_a_source_that_does_not_verify_is_not_rescored(runs: Path, tmp_path: Path):
    import shutil

    copy = tmp_path / "runs"
    shutil.copytree(runs / SOURCE, copy / SOURCE)
    result = next((copy / SOURCE).glob("neg-run_dated_late__payment-run/seed-0/rep-1/result.json"))
    data = json.loads(result.read_text())
    data["passed"] = True
    result.write_text(json.dumps(data))
    with pytest.raises(RegradeError, match="does not verify"):
        regrade_label(copy, SOURCE, "after-tamper")
    assert not (copy / "after-tamper").exists()


def test_a_task_wrong_decision_then_a_loosened_version_flips_exactly_that_check(runs: Path):
    """The review's `task_wrong` is the input of a new task version; its regrade flips that
    attempt's verdict on that check and nothing else. (Runs last: it appends to the source's
    reviews.jsonl, which no other test reads.)"""
    from orchestrator.review.decisions import failed_checks, read, read_ledger

    [(line, failed)] = [(ln, c) for ln in read_ledger(runs / SOURCE) for c in failed_checks(ln)]
    assert (line["identity"]["cell"], failed["name"]) == (NEG, LOOSENED)
    assert main(["review", SOURCE, "--attempt", line["attempt_id"], "--check", LOOSENED, "--decision", "task_wrong",
                 "--kind", "alternative", "--note", "a run dated the day after is allowed by PAY-2", "--by", "ana",
                 "--runs-root", str(runs)]) == 0
    [decision] = read(runs / SOURCE)
    regrade_label(runs, SOURCE, "after-review", inputs=_loosened)
    delta = json.loads((runs / "after-review" / "delta.json").read_text())
    flipped = [(cell, a["source_attempt_id"]) for cell, e in delta["cells"].items() for a in e["attempts"]
               if a["passed_before"] != a["passed_after"]]
    assert flipped == [(NEG, decision.attempt_id)]
    [attempt] = delta["cells"][NEG]["attempts"]
    assert [c["check"] for c in attempt["checks"]] == [decision.check]
