"""End to end on the local backend: a tiny real pack (real bb-erp, real policies) through
ensure_scenario (reference by the oracle), run_attempt, the grader and `validate`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from mini_pack import write_mini

pytestmark = pytest.mark.slow


@pytest.fixture
def mini(tmp_path, monkeypatch):
    root = tmp_path / "tasks"
    monkeypatch.setenv("PB_TASKS_ROOT", str(root))
    monkeypatch.setenv("PB_SCENARIO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PB_SCRATCH_ROOT", str(tmp_path / "scratch"))
    return write_mini(root)


def test_scenario_reference_and_validation(mini, tmp_path):
    from orchestrator.scenarios.cache import ensure_scenario
    from orchestrator.validate import run_validation

    scen = ensure_scenario("mini", 0)
    ref = (scen.reference_dir / "escalations.csv").read_text()
    assert ref == "vendor,reason,to_user\nOhio Packaging 0,bank_change,priya\n"

    rep = run_validation(["mini"], [0], strict=True, faults=None, backend="local", runs_root=tmp_path / "runs")
    assert rep.ok, [(e.control, e.seed, e.note) for e in rep.problems]
    seen = {(e.control, e.seed) for e in rep.entries}
    assert {("oracle#1", 0), ("oracle#2", 0), ("determinism", 0), ("null", 0), ("neg:double", 0),
            ("neg:no_escalation", 0), ("disclosure probe", 0), ("alt", 0)} <= seen
    alt = next(e for e in rep.entries if e.control == "alt")
    assert alt.ok and alt.failed == [] and alt.canonical and len(alt.canonical) == 64, alt
    # The alt's route leaves another database than the oracle's (no keys, other note, other order).
    oracle = next(e for e in rep.entries if e.control == "oracle#1")
    assert oracle.canonical != alt.canonical
    # The clean oracle ran once: its second run is the scenario's reference run, same canonical state.
    second = next(e for e in rep.entries if e.control == "oracle#2")
    assert "reference run" in second.note and second.canonical == oracle.canonical, second
    assert len([p for p in (tmp_path / "runs").rglob("result.json") if "oracle" in str(p)]) == 1
    # The probe read the oracle's real final database: the pending account's two numbers
    # against the call and the escalation the oracle wrote, and found nothing.
    tally = rep.disclosure["mini"]
    assert (tally.runs, tally.findings, tally.classes, tally.values) == (1, 0, {"vendor_bank"}, 2)
    assert tally.places >= 1  # at least the escalation note

    # The attempt record holds the agent's projections beside the reference.
    results = sorted((tmp_path / "runs").rglob("result.json"))
    assert results
    oracle = [json.loads(p.read_text()) for p in results if "oracle" in str(p)][0]
    assert oracle["passed"] is True and oracle["writes"]["total"] >= 2
    proj = Path(results[0]).parent / "projections"
    assert (proj / "escalations.csv").exists() and (proj / "escalations.reference.csv").exists()


def test_an_alt_that_fails_a_check_is_a_problem_naming_the_check(mini, tmp_path):
    """The alt control: an alt route that leaves out the note (a check, if not a required one)
    is a problem naming that check, at its seed and condition; the rest of the matrix holds."""
    from orchestrator.validate import run_validation

    text = (mini / "alt.py").read_text()
    (mini / "alt.py").write_text(text.replace('    (workspace / "notes.md").write_text(', '    (workspace / "x.md").write_text('))
    rep = run_validation(["mini"], [0], strict=True, faults=None, backend="local", runs_root=tmp_path / "runs")
    assert [(e.control, e.seed, e.condition) for e in rep.problems] == [("alt", 0, "clean")]
    bad = rep.problems[0]
    assert bad.note.startswith("alt failed: note names the vendor's escalation ("), bad.note
    assert bad.failed == ["note names the vendor's escalation"] and not bad.infra


@pytest.mark.heavy  # make test-heavy: CI runs a representative subset (the same path is covered in make test)
def test_validation_under_a_fault_profile(mini, tmp_path):
    from orchestrator.validate import run_validation

    rep = run_validation(["mini"], [0], strict=True, faults="lost-writes", backend="local",
                         runs_root=tmp_path / "runs")
    assert rep.ok, [(e.control, e.seed, e.note) for e in rep.problems]
    assert rep.condition == "lost-writes"
    assert {("faults hit oracle", 0), ("neg:blind-retry", 0), ("alt", 0)} <= {(e.control, e.seed) for e in rep.entries}
    alt = next(e for e in rep.entries if e.control == "alt")
    assert alt.condition == "lost-writes" and alt.ok and alt.note == "pass (1 fault(s))", alt  # looked before resending
    oracle = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("result.json") if "oracle" in str(p)][0]
    fm = oracle["fault_metrics"]
    assert fm["faults_injected"] == 1 and fm["committed_behind_a_failure"] == 1
    assert fm["faulted_requests_resent"] == 1 and fm["resent_with_key"] == 1 and fm["duplicates"] == 0
    assert oracle["condition"] == "lost-writes" and oracle["passed"] is True


def test_a_stopped_validation_tears_its_attempts_down_and_exits_130(mini, tmp_path):
    """SIGTERM while the oracles' turns run: each attempt in flight is cancelled and torn down
    (its result says so, no process of it is left), nothing else starts, the command exits 130
    and says it was interrupted rather than passing or failing the task."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from orchestrator.scenarios.cache import ensure_scenario

    # The oracle dawdles once the flag exists: after its reference run (the flag is part of the
    # pack's source, so the scenario is the one the command will find).
    flag = tmp_path / "dawdle"
    text = (mini / "policies.py").read_text()
    (mini / "policies.py").write_text(text.replace(
        "def oracle(turn, client, workspace, context):\n",
        f"def oracle(turn, client, workspace, context):\n    import pathlib, time\n"
        f"    if pathlib.Path({str(flag)!r}).exists():\n        time.sleep(120)\n", 1))
    ensure_scenario("mini", 0)
    flag.touch()
    runs = tmp_path / "runs"
    argv = [str(Path(sys.executable).with_name("orchestrate")), "validate", "--tasks", "mini", "--seeds", "0",
            "--backend", "local", "--jobs", "2", "--fresh-oracles", "--runs-root", str(runs)]  # both oracles first
    log = tmp_path / "validate.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while len(list(runs.glob("*/*/seed-0/rep-*/turns/*"))) < 2:  # both oracles in their turn
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        time.sleep(1)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=90)
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = log.read_text(errors="replace")
    assert code == 130, out[-3000:]
    assert stopped_in < 60, stopped_in  # not the two minutes the turns would have slept
    assert "interrupted" in out and "validation passed" not in out, out[-2000:]
    folders = sorted(runs.glob("*/*/seed-0/rep-*"))
    results = [json.loads((f / "result.json").read_text()) for f in folders]
    assert len(results) == 2 and all("oracle" in str(f) for f in folders), folders  # null and controls never began
    assert all(r["outcome"] == "infra_error" and "cancel" in json.dumps(r["error"]) for r in results), results
    # nothing of the attempts runs on: no process has its working folder under the scratch root
    scratch = str(tmp_path / "scratch")
    left = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and os.readlink(p / "cwd").startswith(scratch):
                left.append(p.name)
        except OSError:
            pass
    assert left == [], left
