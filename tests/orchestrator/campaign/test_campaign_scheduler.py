"""The campaign scheduler: bounded concurrency, resume, infra retries, clean stop (no containers).

The runner here stands in for `run_attempt` and writes result records shaped per contracts §9;
test_campaign_e2e.py runs the real runtime.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from campaign_support import FakeJob, declare

from orchestrator.campaign.declaration import is_finished
from orchestrator.campaign.export import export_label, planned_identities, verify_label
from orchestrator.campaign.scheduler import Scheduler


def _sched(root, runner, **kw):
    return Scheduler(runs_root=root, label="L", job=runner, concurrency=kw.pop("concurrency", 2),
                     infra_retries=kw.pop("infra_retries", 2), **kw)


def test_runs_all_then_resume_runs_nothing(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run", "null:payment-run"], [0, 1], 2)
    plan = planned_identities(decl)
    runner = FakeJob(tmp_path, "L")
    run = _sched(tmp_path, runner).run(plan)
    assert run.finished == 8 and run.skipped == 0 and len(runner.calls) == 8
    again = FakeJob(tmp_path, "L")
    run2 = _sched(tmp_path, again).run(plan)
    assert run2.skipped == 8 and again.calls == []


def test_infra_errors_are_retried_and_kept_aside_agent_errors_are_not(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run", "null:payment-run"], [0], 1)
    plan = planned_identities(decl)
    runner = FakeJob(tmp_path, "L", {
        ("oracle", 0, 1): ["infra_error", "infra_error"],   # third try passes
        ("null", 0, 1): ["agent_error"],                     # never retried
    })
    _sched(tmp_path, runner).run(plan)
    assert runner.calls.count(("oracle", 0, 1)) == 3 and runner.calls.count(("null", 0, 1)) == 1
    oracle = [p for p in plan if p.system == "oracle"][0]
    folder = oracle.folder(tmp_path, "L")
    assert sorted(p.name for p in folder.parent.iterdir()) == ["rep-1", "rep-1.try-1", "rep-1.try-2"]
    export_label(tmp_path, "L")
    assert verify_label(tmp_path, "L").ok


def test_infra_error_after_all_retries_stays_and_is_retried_on_resume(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0], 1)
    plan = planned_identities(decl)
    runner = FakeJob(tmp_path, "L", {("oracle", 0, 1): ["infra_error"] * 5})
    _sched(tmp_path, runner, infra_retries=1).run(plan)
    assert len(runner.calls) == 2
    folder = plan[0].folder(tmp_path, "L")
    assert not is_finished(folder)
    summary = export_label(tmp_path, "L")
    cell = summary["cells"]["oracle:payment-run"]
    assert cell["infra_errors"] == 1 and cell["scored"] == 0 and cell["pass_at_1"] is None
    # resume: tried again (after the earlier folder is set aside), now it works
    runner2 = FakeJob(tmp_path, "L")
    _sched(tmp_path, runner2, infra_retries=1).run(plan)
    assert len(runner2.calls) == 1 and is_finished(folder)
    assert sorted(p.name for p in folder.parent.iterdir()) == ["rep-1", "rep-1.try-1", "rep-1.try-2"]


def test_leftover_folder_of_a_killed_run_is_set_aside(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0], 1)
    plan = planned_identities(decl)
    folder = plan[0].folder(tmp_path, "L")
    (folder / "logs").mkdir(parents=True)  # what SIGKILL mid-attempt leaves
    _sched(tmp_path, FakeJob(tmp_path, "L")).run(plan)
    assert is_finished(folder) and folder.with_name("rep-1.try-1").is_dir()


class SlowRunner(FakeJob):
    def __init__(self, *a, delay=0.2, **kw):
        super().__init__(*a, **kw)
        self.delay, self.active, self.peak = delay, 0, 0

    def __call__(self, ident, folder, cancel):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        try:
            return super().__call__(ident, folder, cancel)
        finally:
            with self.lock:
                self.active -= 1


def test_concurrency_is_bounded(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0, 1, 2], 3)
    runner = SlowRunner(tmp_path, "L", delay=0.1)
    _sched(tmp_path, runner, concurrency=3).run(planned_identities(decl))
    assert runner.peak == 3 and len(runner.calls) == 9


def test_stop_lets_in_flight_attempts_finish_and_starts_nothing_new(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0, 1, 2, 3], 2)
    plan = planned_identities(decl)
    runner = SlowRunner(tmp_path, "L", delay=0.4)
    sched = _sched(tmp_path, runner, concurrency=2)
    threading.Timer(0.1, sched.stop).start()
    run = sched.run(plan)
    assert len(runner.calls) == 2 and run.finished == 2 and run.not_started == 6 and run.interrupted
    assert all(is_finished(p.folder(tmp_path, "L")) for p in plan if (p.system, p.seed, p.rep) in runner.calls)
    # the same plan again finishes the rest, without re-running the two
    runner2 = FakeJob(tmp_path, "L")
    run2 = _sched(tmp_path, runner2).run(plan)
    assert run2.skipped == 2 and len(runner2.calls) == 6


def test_runner_that_raises_is_an_infra_error_not_a_crash(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0], 1)
    plan = planned_identities(decl)

    def broken(ident, folder, cancel):
        raise ConnectionError("docker daemon went away")

    run = _sched(tmp_path, broken, infra_retries=1).run(plan)
    assert run.finished == 1
    summary = export_label(tmp_path, "L")
    assert summary["cells"]["oracle:payment-run"]["infra_errors"] == 1
    assert summary["cells"]["oracle:payment-run"]["retries"] == 1


def test_fatal_input_error_stops_the_campaign_and_is_raised(tmp_path: Path):
    import pytest

    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0, 1, 2], 1)

    class BadInput(Exception):
        pass

    calls = []

    def runner(ident, folder, cancel):
        calls.append(ident)
        raise BadInput("unknown system")

    with pytest.raises(BadInput):
        _sched(tmp_path, runner, concurrency=1, fatal=(BadInput,)).run(planned_identities(decl))
    assert len(calls) == 1
