"""Structured logs: each attempt's logs/runtime.jsonl (JSON lines of that attempt only, with its
phases and their durations), the campaign's events.jsonl, and a human console."""
from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from runtime_support import fake_scenario

from orchestrator.attempt import AttemptSpec, run_attempt
from orchestrator.backends.local import LocalBackend
from orchestrator.campaign.scheduler import EVENTS_FILE, Scheduler
from orchestrator.cells import parse_cell
from orchestrator.config import RuntimeConfig
from orchestrator.errors import ConfigError
from orchestrator.identity import AttemptIdentity
from orchestrator.logs import configure_console, get_logger

PHASES = ["resolve", "open", "services", "turn", "freeze", "grade", "teardown"]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_each_attempt_logs_its_own_phases_as_json_lines(tmp_path):
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-logs")
    backend = LocalBackend(cfg)
    results = {}

    def one(rep: int) -> None:
        scenario, task = fake_scenario(tmp_path / f"scenario-{rep}", turns=1)
        spec = AttemptSpec(parse_cell("null:fake"), 0, rep=rep)
        results[rep] = run_attempt(spec, backend=backend, config=cfg, scenario=scenario, task=task, grade=False)

    threads = [threading.Thread(target=one, args=(rep,)) for rep in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert sorted(results) == [1, 2]
    for result in results.values():
        assert result.outcome == "graded", result.error
        lines = _lines(result.paths.runtime_log)
        # Only this attempt's lines, each with its id, a timestamp, a level and a logger.
        assert {ln.get("attempt_id") for ln in lines} == {result.attempt_id}
        assert all({"ts", "level", "logger", "event"} <= set(ln) for ln in lines), lines[:3]
        ended = {ln["phase"]: ln["duration_s"] for ln in lines if ln["event"] == "phase_end"}
        assert list(ended) == PHASES, [ln["event"] for ln in lines]
        assert all(isinstance(d, float) and d >= 0 for d in ended.values())
        # The durations in the log are the ones in result.json.
        for phase, d in ended.items():
            assert abs(result.record["timings"][f"{phase}_s"] - d) < 0.01
        finished = [ln for ln in lines if ln["event"] == "attempt_finished"]
        assert finished and finished[0]["outcome"] == "graded"
        assert lines[0]["event"] == "attempt_started" and lines[-1] is finished[0]  # first to last line


def test_bad_input_records_nothing_and_leaves_no_log_handler(tmp_path):
    """A ConfigError (here: a command system without a systems file) is raised before the attempt
    folder exists; the lines held for runtime.jsonl are dropped with their handler."""
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-logs")
    scenario, task = fake_scenario(tmp_path / "scenario", turns=1)
    before = list(logging.getLogger("orchestrator").handlers)
    with pytest.raises(ConfigError):
        run_attempt(AttemptSpec(parse_cell("my-agent:fake"), 0), backend=LocalBackend(cfg), config=cfg,
                    scenario=scenario, task=task, grade=False)
    assert not (tmp_path / "runs").exists()
    assert logging.getLogger("orchestrator").handlers == before


def test_a_failed_phase_is_logged_with_its_error(tmp_path):
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-logs")
    scenario, task = fake_scenario(tmp_path / "scenario", turns=1)
    scenario.db = tmp_path / "missing.db"  # the ERP service cannot get its database
    result = run_attempt(AttemptSpec(parse_cell("null:fake"), 0), backend=LocalBackend(cfg), config=cfg,
                         scenario=scenario, task=task, grade=False)
    assert result.outcome == "infra_error" and result.record["error"]["phase"] == "services"
    lines = _lines(result.paths.runtime_log)
    failed = [ln for ln in lines if ln["event"] == "phase_failed"]
    assert failed and failed[0]["phase"] == "services" and failed[0]["error"] == "FileNotFoundError", failed
    assert any(ln["event"] == "attempt_failed" and ln["outcome"] == "infra_error" for ln in lines)


def test_the_campaign_event_log(tmp_path):
    idents = [AttemptIdentity(task="fake", system="null", condition="clean", seed=0, rep=rep, task_version="1") for rep in (1, 2)]

    def runner(ident, folder, cancel):
        folder.mkdir(parents=True, exist_ok=True)
        get_logger("orchestrator.attempt.phases").info("phase_end", attempt_id=ident.attempt_id, phase="turn", duration_s=0.5)
        outcome = "graded" if ident.rep == 1 else "task_error"
        result = {"attempt_id": ident.attempt_id, "outcome": outcome, "passed": ident.rep == 1}
        (folder / "result.json").write_text(json.dumps(result))
        return result

    sched = Scheduler(runs_root=tmp_path, label="L", job=runner, concurrency=2, infra_retries=1)
    run = sched.run(idents)
    assert run.finished == 2
    lines = _lines(tmp_path / "L" / EVENTS_FILE)
    events = [ln["event"] for ln in lines]
    assert events[0] == "campaign_started" and events[-1] == "campaign_finished"
    finished = {ln["attempt_id"]: ln["outcome"] for ln in lines if ln["event"] == "attempt_finished"}
    assert finished == {idents[0].attempt_id: "graded", idents[1].attempt_id: "task_error"}  # task_error: no retry
    assert not [ln for ln in lines if ln["event"] == "attempt_retry"]
    phases = [ln for ln in lines if ln["event"] == "phase_end"]
    assert {ln["attempt_id"] for ln in phases} == {i.attempt_id for i in idents} and all(ln["duration_s"] == 0.5 for ln in phases)


def test_the_console_is_for_people(capsys):
    configure_console(verbose=False)
    try:
        get_logger("orchestrator.test").warning("service_slow", service="erp", waited_s=3)
        get_logger("orchestrator.test").info("not shown without --verbose")
        logging.getLogger("orchestrator.test").warning("a plain %s line", "stdlib")
    finally:
        root = logging.getLogger()
        for h in [h for h in root.handlers if getattr(h, "_pb_console", False)]:
            root.removeHandler(h)
    err = capsys.readouterr().err
    assert "service_slow" in err and "service=erp" in err and "waited_s=3" in err, err
    assert "a plain stdlib line" in err and "not shown" not in err
    assert not err.lstrip().startswith("{")
