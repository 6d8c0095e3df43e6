"""The bounded pool that runs a campaign's attempts.

- At most `concurrency` attempts are in flight; each runs in its own worker thread (an attempt is
  mostly waiting on containers and HTTP, so threads are enough and keep one process to reap).
- Finished attempts (a final result.json) are skipped, so re-running a label resumes.
- An attempt that ends `infra_error` is run again up to `infra_retries` times; the failed folder
  is kept aside as `rep-<k>.try-<j>` and the ledger records it. Agent outcomes (graded,
  agent_error) are never retried, nor is a `task_error` (the task's bug would fail again).
  A folder left by a killed run (no result.json) is kept aside
  the same way before the attempt runs again.
- Every event is also a JSON line of `runs/<label>/events.jsonl` (orchestrator/logs.py), beside
  the phase events of the attempts in flight.
- Attempts run through an executor (orchestrator/campaign/executor.py): a plain `AttemptJob`
  runs in the worker thread itself; an `Executor` may run it elsewhere (a Ray node) and says
  where (a `placed` event, whose node the later events of that try carry).
- A campaign cost budget (orchestrator/model_limits.py: `CostBudget`) is consulted before each
  attempt starts: one that could take the campaign past it is not started (not run, never
  scored), and `cost_budget.json` says so.
- `stop()` (wired to SIGINT/SIGTERM by the command) stops scheduling: no new attempt or retry
  starts; attempts in flight are asked to cancel when the job supports it, and always get to
  tear down before the workers exit.
"""
from __future__ import annotations

import json
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from orchestrator.attempt.records import ErrorRecord, ResultRecord
from orchestrator.campaign.declaration import is_finished, read_result
from orchestrator.campaign.executor import Executor
from orchestrator.errors import AttemptOutcome
from orchestrator.identity import AttemptIdentity, retry_dirs, try_folder
from orchestrator.logs import campaign_log, get_logger
from orchestrator.model_limits import CostBudget, attempt_cost

EVENTS_FILE = "events.jsonl"
log = get_logger(__name__)


class AttemptJob(Protocol):
    """Runs one attempt into `folder` and returns its result (the content of result.json)."""

    def __call__(self, ident: AttemptIdentity, folder: Path, cancel: threading.Event) -> dict[str, Any]: ...


@dataclass
class AttemptEvent:
    """What the scheduler reports to the display: an attempt started, retried, finished or skipped."""

    kind: str  # "skipped" | "started" | "placed" | "retry" | "finished"
    ident: AttemptIdentity
    outcome: str | None = None
    passed: bool = False
    tries: int = 0
    duration_s: float = 0.0
    error: str | None = None
    node: str | None = None  # where the try runs, when the executor says (a Ray node)


@dataclass
class CampaignRun:
    """What happened in one invocation (the ledger holds the full record)."""

    skipped: int = 0
    finished: int = 0
    not_started: int = 0
    interrupted: bool = False
    over_budget: int = 0  # not started: the campaign cost budget would have been exceeded
    events: list[AttemptEvent] = field(default_factory=list)


def set_aside(folder: Path) -> Path:
    """Move an attempt folder to the next free `rep-<k>.try-<j>` beside it; return the new path."""
    index = len(retry_dirs(folder)) + 1
    target = try_folder(folder, index)
    while target.exists():  # never overwrite an earlier try
        index += 1
        target = try_folder(folder, index)
    folder.rename(target)
    return target


def _error_text(result: dict[str, Any]) -> str | None:
    err = result.get("error")
    if err is None:
        return None
    if isinstance(err, dict):
        parts = [str(err.get(k)) for k in ("phase", "exception", "message") if err.get(k)]
        return ": ".join(parts) or json.dumps(err, sort_keys=True)
    return str(err)


def write_orchestrator_failure(
    folder: Path, ident: AttemptIdentity, exc: BaseException, *, label: str, outcome: AttemptOutcome = "infra_error"
) -> dict[str, Any]:
    """Record an attempt that never ran to a result of its own: by default an infra error (the
    attempt job raised instead of finalising); `task_error` when its scenario could not be built.
    Never scored. The try's run id is its attempt.json's when it got that far."""
    folder.mkdir(parents=True, exist_ok=True)
    started = read_result(folder, "attempt.json") or {}
    result = ResultRecord(
        identity=ident,
        run_id=str(started.get("run_id") or "not-started"),
        label=label,
        isolation=started.get("isolation"),
        outcome=outcome,
        error=ErrorRecord(phase="campaign", kind=outcome, exception=type(exc).__name__, message=str(exc),
                          traceback="".join(traceback.format_exception(exc)[-6:])),
        written_by="campaign",
    ).to_json()
    tmp = folder / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    tmp.replace(folder / "result.json")
    return result


class Scheduler:
    """Runs planned attempts with bounded concurrency, retries and a clean stop."""

    def __init__(
        self,
        *,
        runs_root: Path,
        label: str,
        job: AttemptJob | Executor,
        concurrency: int,
        infra_retries: int,
        on_event: Callable[[AttemptEvent], None] | None = None,
        fatal: tuple[type[BaseException], ...] = (),
        cost_budget: CostBudget | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.runs_root = runs_root
        self.label = label
        self.job = job
        self.concurrency = concurrency
        self.infra_retries = infra_retries
        self.on_event = on_event or (lambda e: None)
        # Exceptions that mean the campaign's input is wrong: stop everything and re-raise.
        self.fatal = fatal
        self.fatal_error: BaseException | None = None
        self.cost_budget = cost_budget
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._in_flight = 0

    # -- control
    def stop(self) -> None:
        """Stop scheduling; attempts in flight are asked to cancel and finish their teardown."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def _emit(self, run: CampaignRun, event: AttemptEvent) -> None:
        with self._lock:
            run.events.append(event)
        fields: dict[str, Any] = {"attempt_id": event.ident.attempt_id, "cell": event.ident.cell.text, "tries": event.tries}
        if event.kind in ("retry", "finished"):
            fields.update(outcome=event.outcome, passed=event.passed, duration_s=round(event.duration_s, 3), error=event.error)
        if event.node is not None:
            fields["node"] = event.node
        log.info(f"attempt_{event.kind}", **fields)
        self.on_event(event)

    # -- one attempt
    def _run_one(self, ident: AttemptIdentity, run: CampaignRun) -> None:
        folder = ident.folder(self.runs_root, self.label)
        if folder.exists():
            # A folder without a final result: a killed run's leftovers or an infra error that
            # a previous invocation gave up on. Keep it as an earlier try, then run again.
            set_aside(folder)
        tries = 0
        while True:
            tries += 1
            start = time.monotonic()
            self._emit(run, AttemptEvent("started", ident, tries=tries))
            where: list[str] = []

            def placed(node: str, tries: int = tries, where: list[str] = where) -> None:
                where[:] = [node]
                self._emit(run, AttemptEvent("placed", ident, tries=tries, node=node))

            try:
                if isinstance(self.job, Executor):
                    result = self.job.run(ident, folder, self._stop, placed)
                else:
                    result = self.job(ident, folder, self._stop)
            except self.fatal as exc:
                with self._lock:
                    self.fatal_error = self.fatal_error or exc
                self.stop()
                return
            except Exception as exc:  # the job must finalise; if it did not, we do
                result = read_result(folder) or write_orchestrator_failure(folder, ident, exc, label=self.label)
            if not (folder / "result.json").exists():
                result = write_orchestrator_failure(folder, ident, RuntimeError("the attempt job wrote no result.json"),
                                                    label=self.label)
            outcome = result.get("outcome")
            duration = time.monotonic() - start
            node = where[0] if where else None
            if outcome == "infra_error" and tries <= self.infra_retries and not self._stop.is_set():
                set_aside(folder)
                self._emit(
                    run, AttemptEvent("retry", ident, outcome, False, tries, duration, _error_text(result), node)
                )
                continue
            self._emit(
                run,
                AttemptEvent(
                    "finished",
                    ident,
                    outcome,
                    bool(result.get("passed")) and outcome == "graded",
                    tries,
                    duration,
                    _error_text(result),
                    node,
                ),
            )
            with self._lock:
                run.finished += 1
            return

    def _worker(self, work: queue.Queue[AttemptIdentity], run: CampaignRun) -> None:
        while not self._stop.is_set():
            try:
                ident = work.get_nowait()
            except queue.Empty:
                return
            budget = self.cost_budget
            if budget is not None and not budget.admit(ident.attempt_id):
                with self._lock:
                    run.over_budget += 1
                log.info("attempt_not_started", attempt_id=ident.attempt_id, reason="campaign cost budget")
                continue
            with self._lock:
                self._in_flight += 1
            try:
                self._run_one(ident, run)
            finally:
                with self._lock:
                    self._in_flight -= 1
                if budget is not None:
                    budget.finished(ident.attempt_id, attempt_cost(ident.folder(self.runs_root, self.label)))

    # -- the campaign
    def run(self, plan: list[AttemptIdentity], *, poll: Callable[[], None] | None = None) -> CampaignRun:
        """Run every unfinished attempt of `plan`; returns when all are done or after a stop."""
        with campaign_log(self.runs_root / self.label / EVENTS_FILE):
            log.info("campaign_started", label=self.label, planned=len(plan), concurrency=self.concurrency)
            t0 = time.monotonic()
            run = self._run(plan, poll)
            log.info(
                "campaign_finished",
                label=self.label,
                finished=run.finished,
                skipped=run.skipped,
                not_started=run.not_started,
                over_budget=run.over_budget,
                interrupted=run.interrupted,
                duration_s=round(time.monotonic() - t0, 3),
            )
            return run

    def _run(self, plan: list[AttemptIdentity], poll: Callable[[], None] | None) -> CampaignRun:
        run = CampaignRun()
        work: queue.Queue[AttemptIdentity] = queue.Queue()
        for ident in plan:
            if is_finished(ident.folder(self.runs_root, self.label)):
                if self.cost_budget is not None:  # a resume: what earlier runs spent counts
                    self.cost_budget.finished(ident.attempt_id, attempt_cost(ident.folder(self.runs_root, self.label)))
                run.skipped += 1
                self._emit(run, AttemptEvent("skipped", ident))
            else:
                work.put(ident)
        threads = [
            threading.Thread(target=self._worker, args=(work, run), name=f"attempt-{i}", daemon=True)
            for i in range(min(self.concurrency, work.qsize()))
        ]
        for t in threads:
            t.start()
        # The main thread only waits (so it can take signals) and refreshes the display.
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.2)
            if poll is not None:
                poll()
        run.not_started = work.qsize() + run.over_budget
        run.interrupted = self._stop.is_set() and work.qsize() > 0
        if self.cost_budget is not None:
            self.cost_budget.write(self.runs_root / self.label)
        if self.fatal_error is not None:
            raise self.fatal_error
        return run
