"""How the validation matrix runs (orchestrator/validate_matrix.py): attempts of every seed at
once, scenarios built ahead, results judged in the matrix's order whatever finishes first, a stop
that begins nothing new, the clean oracle's second run taken from the scenario's reference run,
and the run's figures (wall time, attempts per minute) printed and recorded."""
from __future__ import annotations

import io
import json
import random
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from grading_fixtures import TASK_YAML, write_generator, write_pack
from rich.console import Console

from orchestrator.validate import validate
from orchestrator.validate_report import print_report

CHECKS = ["payments set", "no held invoice paid"]
FAULTED = TASK_YAML.format(slug="tiny") + (
    "fault_profiles:\n  lost-writes:\n    faults: 'lost_response:POST /x@1'\n"
    "    negative_controls:\n      neg:blind-retry: [no held invoice paid]\n")


def result(passed, failed=(), hash="h1", **kw):
    return {"outcome": "graded", "passed": passed, "grader_errors": [],
            "checks": [{"name": n, "passed": n not in failed} for n in CHECKS],
            "turns": [{"n": 1, "exit_code": 0, "timed_out": False}], "hashes": {"canonical_db": hash}, **kw}


@dataclass
class Scen:
    handbook_dir: Path
    turns: list
    dir: Path


@pytest.fixture(scope="module")
def scenario_dir(tmp_path_factory) -> Path:
    from tasks.registry import load_task

    root = tmp_path_factory.mktemp("tasks")
    _write_tiny(root)
    return load_task("tiny", root).generate(0, root / "scenario")


def _write_tiny(root: Path, task: str | None = None) -> None:
    d = write_pack(root, task=task)
    write_generator(d)
    (d / "policies.py").write_text("POLICIES = {'oracle': None, 'neg:pay_all': None, 'neg:blind-retry': None}\n")
    (d / "alt.py").write_text("POLICIES = {'alt': None}\n")


@pytest.fixture
def pack(tmp_path, monkeypatch, scenario_dir):
    monkeypatch.setenv("PB_TASKS_ROOT", str(tmp_path))
    _write_tiny(tmp_path)
    shutil.copytree(scenario_dir, tmp_path / "scenario")
    return tmp_path


def outcome(cell, pack: Path, fault=0):
    """What a well-behaved pack's attempt gives: the oracle and alt pass, the others fail."""
    extra = {"fault_metrics": {"faults_injected": fault}}
    if cell.system == "oracle":
        return {**result(True, **extra), "_final_db": str(pack / "scenario" / "scenario.db")}
    if cell.system == "alt":
        return result(True, **extra)
    if cell.system == "neg:blind-retry":
        return result(False, ["no held invoice paid"])
    return result(False, CHECKS)


def scen_of(pack: Path) -> Scen:
    return Scen(pack / "tiny" / "handbook", [object()], pack / "scenario")


def test_attempts_of_every_seed_run_at_once_and_the_report_keeps_the_matrix_order(pack):
    """Three seeds, eight jobs: more attempts run at once than one condition holds (the pool spans
    seeds), attempts finish in a shuffled order, and the entries are exactly a serial run's."""
    lock = threading.Lock()
    active, peak = [0], [0]
    rng = random.Random(7)
    delays = [rng.uniform(0.0, 0.15) for _ in range(64)]

    def runner(cell, seed, rep, *, scenario=None, task=None):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            delay = delays.pop() if delays else 0.0
        time.sleep(delay)
        with lock:
            active[0] -= 1
        return outcome(cell, pack)

    scen = scen_of(pack)
    kw = dict(run_one=runner, scenario_for=lambda s, n: scen, known_rules=["pay_held_invoice"], strict=True)
    wide = validate(["tiny"], [0, 1, 2], concurrency=8, **kw)
    assert peak[0] > 5, peak  # one condition of the tiny pack is 5 attempts: the pool spanned seeds
    peak[0] = 0
    serial = validate(["tiny"], [0, 1, 2], concurrency=1, **kw)
    assert peak[0] == 1
    assert wide.ok, [(e.control, e.seed, e.note) for e in wide.problems]
    assert [(e.control, e.seed, e.condition, e.ok, e.note) for e in wide.entries] == \
        [(e.control, e.seed, e.condition, e.ok, e.note) for e in serial.entries]
    assert wide.figures is not None and wide.figures.attempts == 15 and wide.figures.scenarios == 3
    assert wide.figures.jobs == 8 and wide.figures.wall_s > 0


def test_the_next_seeds_scenario_is_built_while_attempts_run(pack):
    """Seed 0's attempts wait until seed 1's scenario build has begun: they could not if builds
    waited for the attempts (the run would stall, and the attempts would report the timeout)."""
    built_1 = threading.Event()
    scen = scen_of(pack)

    def scenario_for(slug, seed):
        if seed == 1:
            built_1.set()
        return scen

    def runner(cell, seed, rep, *, scenario=None, task=None):
        if seed == 0 and not built_1.wait(timeout=20):
            return {"outcome": "infra_error", "error": {"message": "seed 1 was not built ahead"}}
        return outcome(cell, pack)

    rep = validate(["tiny"], [0, 1], run_one=runner, scenario_for=scenario_for, known_rules=["pay_held_invoice"],
                   concurrency=2, scenario_jobs=1)
    assert rep.ok, [(e.control, e.seed, e.note) for e in rep.problems]


def test_a_stop_begins_nothing_new_and_the_report_says_interrupted(pack):
    """Stopped during the first attempts: those in flight are judged only if their whole condition
    ran; nothing more begins; the report is interrupted with no verdict for the rest."""
    calls = []
    stop = threading.Event()

    def runner(cell, seed, rep, *, scenario=None, task=None):
        calls.append((cell.system, seed))
        stop.set()
        return outcome(cell, pack)

    scen = scen_of(pack)
    rep = validate(["tiny"], [0, 1, 2], run_one=runner, scenario_for=lambda s, n: scen,
                   known_rules=["pay_held_invoice"], concurrency=1, stopped=stop.is_set)
    assert rep.interrupted
    assert calls == [("oracle", 0)]  # one begun, every other attempt not begun
    assert not [e for e in rep.entries if e.seed is not None and e.control != "scenario"]
    assert rep.figures is not None and rep.figures.attempts == 1


def _recorded_reference(pack: Path, digest: str) -> None:
    d = pack / "scenario" / "oracle-run"
    d.mkdir(exist_ok=True)
    (d / "oracle.json").write_text(json.dumps({"canonical_db": digest, "files": [], "turns": []}))


def test_the_clean_second_oracle_run_is_the_scenarios_reference_run(pack):
    """With a recorded reference run, a clean condition runs the oracle once on the backend and
    compares it with the reference run's hash; a fault condition still runs it twice; a hash
    that differs is a determinism problem; `reuse_reference=False` runs it twice."""
    _write_tiny(pack, task=FAULTED)
    _recorded_reference(pack, "h1")
    seen = []

    def runner(cell, seed, rep, *, scenario=None, task=None):
        seen.append((cell.system, cell.condition, rep))
        return outcome(cell, pack, fault=0 if cell.condition == "clean" else 1)

    scen = scen_of(pack)
    kw = dict(run_one=runner, scenario_for=lambda s, n: scen, known_rules=["pay_held_invoice"], strict=True,
              faults="all")
    rep = validate(["tiny"], [0], **kw)
    assert rep.ok, [(e.control, e.condition, e.note) for e in rep.problems]
    oracles = sorted((c, r) for s, c, r in seen if s == "oracle")
    assert oracles == [("clean", 1), ("lost-writes", 1), ("lost-writes", 2)]
    second = next(e for e in rep.entries if e.control == "oracle#2" and e.condition == "clean")
    assert second.ok and second.canonical == "h1" and "reference run" in second.note
    assert rep.disclosure["tiny"].runs == 3  # oracle#1 clean, both lost-writes runs

    _recorded_reference(pack, "h-other")
    rep = validate(["tiny"], [0], **kw)
    assert [(e.control, e.condition) for e in rep.problems] == [("determinism", "clean")]
    assert "canonical hashes differ: h1 vs h-other" in rep.problems[0].note

    seen.clear()
    rep = validate(["tiny"], [0], reuse_reference=False, **kw)
    assert rep.ok and sorted(r for s, c, r in seen if s == "oracle" and c == "clean") == [1, 2]


def test_the_runs_figures_are_printed_and_recorded(pack):
    from orchestrator.validation_record import build_record

    scen = scen_of(pack)
    rep = validate(["tiny"], [0], run_one=lambda cell, seed, r, **kw: outcome(cell, pack),
                   scenario_for=lambda s, n: scen, known_rules=["pay_held_invoice"], concurrency=3)
    buf = io.StringIO()
    print_report(rep, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "validation wall time 0:00:0" in text and "5 attempt(s)" in text and "per minute" in text
    run = build_record(rep, {}, {}, ["tiny"])["run"]
    assert run["attempts"] == 5 and run["scenario_builds"] == 1 and run["jobs"] == 3
    assert run["attempts_per_min"] > 0 and run["wall_s"] >= 0


def test_the_commands_default_jobs():
    from orchestrator.commands.validate import DEFAULT_JOBS_PER_CPU, default_jobs

    assert default_jobs({"PB_VALIDATE_JOBS": "5", "PB_VALIDATE_SCENARIO_JOBS": "2"}) == (5, 2)
    jobs, builds = default_jobs({})
    assert jobs >= DEFAULT_JOBS_PER_CPU and builds == 1
    with pytest.raises(ValueError):
        default_jobs({"PB_VALIDATE_JOBS": "many"})
