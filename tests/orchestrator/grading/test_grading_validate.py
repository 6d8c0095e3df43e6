"""Validation logic (§11) with a scripted attempt runner: which results count as problems."""
from __future__ import annotations

import io
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from grading_fixtures import TASK_YAML, write_generator, write_pack

from orchestrator.validate import Report, control_problems, validate
from orchestrator.validate_report import print_report

CHECKS = ["payments set", "no held invoice paid"]


def result(passed, failed=(), outcome="graded", turns=1, **kw):
    return {"outcome": outcome, "passed": passed, "grader_errors": [],
            "checks": [{"name": n, "passed": n not in failed} for n in CHECKS],
            "turns": [{"n": i + 1, "exit_code": 0, "timed_out": False} for i in range(turns)],
            "hashes": {"canonical_db": kw.pop("hash", "h1")}, **kw}


@dataclass
class Scen:
    handbook_dir: Path
    turns: list
    dir: Path


# The tiny pack's scripted policies: what the pack lint wants declared (the runner below plays
# the attempts' results).
POLICIES_PY = "POLICIES = {'oracle': None, 'neg:pay_all': None, 'neg:blind-retry': None}\n"


def _write_tiny(root: Path, task: str | None = None, alt: bool = True) -> Path:
    d = write_pack(root, task=task)
    write_generator(d)
    (d / "policies.py").write_text(POLICIES_PY)
    if alt:
        (d / "alt.py").write_text("POLICIES = {'alt': None}\n")
    elif (d / "alt.py").exists():
        (d / "alt.py").unlink()
    return d


@pytest.fixture(scope="module")
def scenario_dir(tmp_path_factory) -> Path:
    """A real scenario of the tiny pack (generated once for the module)."""
    from tasks.registry import load_task

    root = tmp_path_factory.mktemp("tasks")
    _write_tiny(root)
    return load_task("tiny", root).generate(0, root / "scenario")


@pytest.fixture
def pack(tmp_path, monkeypatch, scenario_dir):
    monkeypatch.setenv("PB_TASKS_ROOT", str(tmp_path))
    _write_tiny(tmp_path)
    shutil.copytree(scenario_dir, tmp_path / "scenario")
    return tmp_path


def with_final_db(cell, r, pack):
    """An oracle's result as the real runner gives it: with its final database (here the tiny
    scenario's own, which nobody wrote to: the disclosure probe finds nothing in it)."""
    if cell.system == "oracle" and "_final_db" not in r:
        return {**r, "_final_db": str(pack / "scenario" / "scenario.db")}
    return r


def run(pack, outcomes, **kw):
    """outcomes: system -> result dict (or callable(seed, rep) -> dict)."""
    outcomes = {"alt": result(True), **outcomes}

    def runner(cell, seed, rep, *, scenario=None, task=None):
        assert scenario is scen and task.slug == "tiny"
        r = outcomes[cell.system]
        return with_final_db(cell, r(seed, rep) if callable(r) else r, pack)

    scen = Scen(pack / "tiny" / "handbook", [object()], pack / "scenario")
    return validate(["tiny"], [0, 1], run_one=runner, scenario_for=lambda s, n: scen,
                    known_rules=["pay_held_invoice"], **kw)


def test_all_good(pack):
    rep = run(pack, {"oracle": result(True), "null": result(False, CHECKS),
                     "neg:pay_all": result(False, CHECKS)}, strict=True)
    assert rep.ok, [(e.control, e.note) for e in rep.problems]
    controls = {e.control for e in rep.entries}
    assert {"handbook", "scenario", "oracle#1", "oracle#2", "determinism", "disclosure probe", "null",
            "neg:pay_all"} <= controls
    tally = rep.disclosure["tiny"]
    assert (tally.runs, tally.findings, tally.classes) == (4, 0, {"vendor_bank"})  # 2 seeds × 2 oracle runs
    buf = io.StringIO()
    from rich.console import Console

    print_report(rep, Console(file=buf, width=120))
    assert "validation passed" in buf.getvalue()


def test_problems_detected(pack):
    rep = run(pack, {
        "oracle": lambda seed, r: result(True, hash=f"h{r}") if seed == 0 else result(False, ["payments set"]),
        "null": result(True),
        "neg:pay_all": result(False, ["payments set"]),
    })
    probs = {(e.control, e.seed): e.note for e in rep.problems}
    assert "canonical hashes differ" in probs[("determinism", 0)]
    assert "oracle failed: payments set" in probs[("oracle#1", 1)]
    assert probs[("null", 0)] == "the null policy passed"
    assert "did not fail target(s) ['no held invoice paid']" in probs[("neg:pay_all", 0)]
    buf = io.StringIO()
    from rich.console import Console

    print_report(rep, Console(file=buf, width=160))
    assert "problem(s)" in buf.getvalue() and "FAIL" in buf.getvalue()


def test_incomplete_attempts_are_problems(pack):
    bad_turn = result(False, CHECKS)
    bad_turn["turns"][0]["timed_out"] = True
    rep = run(pack, {"oracle": result(True), "null": result(False, CHECKS, outcome="infra_error", error={"message": "boom"}),
                     "neg:pay_all": bad_turn})
    probs = {e.control: e.note for e in rep.problems}
    assert "outcome infra_error: boom" in probs["null"]
    assert "timed_out True" in probs["neg:pay_all"]


def test_runner_exception_is_a_problem_not_a_crash(pack):
    def boom(seed, rep):
        raise RuntimeError("no such system")

    rep = run(pack, {"oracle": result(True), "null": boom, "neg:pay_all": result(False, CHECKS)})
    assert any("RuntimeError: no such system" in e.note for e in rep.problems)


def test_strict_flags_control_failing_only_other_checks():
    assert control_problems(result(False, ["no held invoice paid"]), ["payments set"], set(CHECKS), 1, strict=True) == [
        "did not fail target(s) ['payments set']",
        "fails only checks it does not target: ['no held invoice paid']",
    ]
    assert control_problems(result(False, CHECKS), ["payments set"], set(CHECKS), 1, strict=True) == []


def test_faults_need_a_profile_and_a_hit(pack):
    rep = run(pack, {}, faults="lost-writes")
    assert any("not a fault profile of tiny" in e.note for e in rep.problems)
    text = TASK_YAML.format(slug="tiny") + (
        "fault_profiles:\n  lost-writes:\n    faults: 'lost_response:POST /x@1'\n"
        "    negative_controls:\n      neg:blind-retry: [no held invoice paid]\n")
    _write_tiny(pack, task=text)
    oracle_hit = result(True, fault_metrics={"faults_injected": 2})
    oracle_miss = result(True, fault_metrics={"faults_injected": 0})
    rep = run(pack, {"oracle": lambda s, r: oracle_hit if s == 0 else oracle_miss,
                     "null": result(False, CHECKS), "neg:pay_all": result(False, CHECKS),
                     "neg:blind-retry": result(True)}, faults="lost-writes")
    probs = {(e.control, e.seed): e.note for e in rep.problems}
    assert ("faults hit oracle", 0) not in probs
    assert "faults injected per oracle run: [0, 0]" in probs[("faults hit oracle", 1)]
    assert "passed (a negative control must fail)" in probs[("neg:blind-retry", 0)]
    assert rep.condition == "lost-writes"


def test_cited_clause_missing_from_scenario_handbook(pack, tmp_path):
    hb = tmp_path / "other-hb"
    hb.mkdir()
    (hb / "payments.md").write_text("**PAY-1.1** only\n")

    def runner(cell, seed, rep, **kw):
        return result(True) if cell.system == "oracle" else result(False, CHECKS)

    rep = validate(["tiny"], [0], run_one=runner, scenario_for=lambda s, n: Scen(hb, [1], pack / "scenario"),
                   known_rules=["pay_held_invoice"])
    assert any("cites ['PAY-2.1'], not in the scenario handbook" in e.note for e in rep.problems)


def test_report_ok_property():
    rep = Report(["t"], [0], "clean")
    rep.add("t", "x", 0, [])
    assert rep.ok
    rep.add("t", "y", 0, ["bad"])
    assert not rep.ok and rep.problems[0].note == "bad"


def test_grader_error_in_a_check_is_a_completion_problem():
    from orchestrator.validate import completion_problems

    r = result(False, ["payments set"])
    r["checks"][0].update(grader_error=True, detail="grader error: LookupError: no table")
    assert completion_problems(r, 1) == ["grader errors: payments set: grader error: LookupError: no table"]


def test_all_faults_validates_clean_and_every_profile(pack):
    text = TASK_YAML.format(slug="tiny") + (
        "fault_profiles:\n  lost-writes:\n    faults: 'lost_response:POST /x@1'\n"
        "    negative_controls:\n      neg:blind-retry: [no held invoice paid]\n")
    _write_tiny(pack, task=text)
    seen = []

    def blind(seed, r):
        return result(False, ["no held invoice paid"])

    outcomes = {"oracle": result(True, fault_metrics={"faults_injected": 1}), "null": result(False, CHECKS),
                "neg:pay_all": result(False, CHECKS), "neg:blind-retry": blind,
                "alt": result(True, fault_metrics={"faults_injected": 1})}

    def runner(cell, seed, rep, *, scenario=None, task=None):
        seen.append((cell.system, cell.condition, seed))
        r = outcomes[cell.system]
        return with_final_db(cell, r(seed, rep) if callable(r) else r, pack)

    scen = Scen(pack / "tiny" / "handbook", [object()], pack / "scenario")
    rep = validate(["tiny"], [0], run_one=runner, scenario_for=lambda s, n: scen,
                   known_rules=["pay_held_invoice"], faults="all", strict=True)
    assert rep.ok, [(e.control, e.condition, e.note) for e in rep.problems]
    assert rep.conditions == ["clean", "lost-writes"]
    assert ("neg:blind-retry", "lost-writes", 0) in seen and ("neg:blind-retry", "clean", 0) not in seen
    assert ("neg:pay_all", "clean", 0) in seen and ("neg:pay_all", "lost-writes", 0) in seen
    assert ("alt", "clean", 0) in seen and ("alt", "lost-writes", 0) in seen  # the alt runs under every condition
    by = {(e.control, e.condition) for e in rep.entries}
    assert {("faults hit oracle", "lost-writes"), ("handbook", "clean"), ("determinism", "clean"),
            ("determinism", "lost-writes")} <= by and ("faults hit oracle", "clean") not in by
    buf = io.StringIO()
    from rich.console import Console

    print_report(rep, Console(file=buf, width=160))
    assert "tiny (clean)" in buf.getvalue() and "tiny (lost-writes)" in buf.getvalue()


def test_a_scenario_that_disagrees_with_task_yaml_is_a_problem(pack):
    import yaml

    turns = yaml.safe_load((pack / "scenario" / "turns.yaml").read_text())
    turns[0]["budget_s"] = 5
    (pack / "scenario" / "turns.yaml").write_text(yaml.safe_dump(turns))
    rep = run(pack, {"oracle": result(True), "null": result(False, CHECKS), "neg:pay_all": result(False, CHECKS)})
    probs = {(e.control, e.seed): e.note for e in rep.problems}
    assert "turns.yaml turn 1" in probs[("scenario", 0)] and "task.yaml says" in probs[("scenario", 0)]


GOOD = {"oracle": result(True), "null": result(False, CHECKS), "neg:pay_all": result(False, CHECKS)}


def test_the_alt_control_must_pass_every_check(pack):
    """The alt policy (issue 41) must complete and pass every check, at every seed; a failed
    check is named; an attempt lost to the infrastructure is marked as such (no verdict)."""
    lost = result(False, outcome="infra_error", error={"message": "engine gone"})
    rep = run(pack, {**GOOD, "alt": lambda seed, r: result(False, ["no held invoice paid"]) if seed == 0 else lost},
              strict=True)
    probs = {(e.control, e.seed): e for e in rep.problems}
    assert set(probs) == {("alt", 0), ("alt", 1)}
    assert probs[("alt", 0)].note.startswith("alt failed: no held invoice paid (")
    assert probs[("alt", 0)].failed == ["no held invoice paid"] and not probs[("alt", 0)].infra
    assert "outcome infra_error: engine gone" in probs[("alt", 1)].note and probs[("alt", 1)].infra
    ok = run(pack, {**GOOD, "alt": result(True, hash="alt-db")}, strict=True)
    alts = [e for e in ok.entries if e.control == "alt"]
    assert ok.ok and [(e.seed, e.ok, e.canonical, e.note) for e in alts] == [(0, True, "alt-db", "pass"),
                                                                            (1, True, "alt-db", "pass")]


def test_a_pack_without_alt_is_a_problem_under_strict_only(pack):
    _write_tiny(pack, alt=False)
    seen = []
    rep = run(pack, {**GOOD, "alt": lambda s, r: seen.append(s) or result(True)}, strict=True)
    assert [(e.control, e.seed) for e in rep.problems] == [("alt", None)]
    assert "no alt policy (alt.py missing)" in rep.problems[0].note and seen == []
    rep = run(pack, GOOD, strict=False)
    assert rep.ok and any("tiny: no alt policy" in n for n in rep.notes)
