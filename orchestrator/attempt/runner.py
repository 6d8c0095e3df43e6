"""The life of one attempt as phases (design.md "Life of an attempt"), the same on every backend.

    resolve         the cell against the task pack, the systems file and the scenario
    open            the backend prepared once, the sandbox opened (networks, volumes)
    services        the ERP started and healthy, its streams followed, the handbook in the workspace
    turn (× n)      advance the clock, run a fresh agent turn under its budget, check the ERP
    freeze          advance to the grading date, flush, drain, snapshot → final.db, stop the
                    services, copy the workspace out
    grade           the grader on the host
    teardown        always (also on Ctrl-C / SIGTERM), then result.json, written last

`run_attempt` never raises for a failed attempt: the outcome (graded | agent_error |
infra_error | task_error), the phase and a post-mortem go into result.json and the returned
`AttemptResult`. It raises only for bad input (`ConfigError`, e.g. an unknown system) before
anything started, and re-raises KeyboardInterrupt after cleaning up and recording it.
"""
from __future__ import annotations

import datetime as dt
import json
import secrets
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_sandbox.prompt import render_prompt
from orchestrator.attempt.adapter_record import attempt_adapter, turn_adapter
from orchestrator.attempt.control_client import ControlClient
from orchestrator.attempt.credentials import AttemptCredentials, issue_credentials
from orchestrator.attempt.frozen_db import canonical_or_none, rollback_journal
from orchestrator.attempt.human_turns import HumanTurns, open_human
from orchestrator.attempt.model_run import ModelRun, agent_image, open_for_attempt
from orchestrator.attempt.mounts import runtime_places
from orchestrator.attempt.phases import PhaseClock, deferred_interrupts, phase_of
from orchestrator.attempt.records import (
    AttemptRecord,
    AttemptSpec,
    ErrorRecord,
    Hashes,
    ResultRecord,
    ScenarioInput,
    TaskInput,
    TurnRecord,
    read_json_object,
    write_json,
)
from orchestrator.attempt.resolve import Resolved, TurnScript, resolve
from orchestrator.attempt.streaming import ControlStreamer
from orchestrator.backends.base import AttemptContext, Backend, Sandbox, TurnLaunch
from orchestrator.cells import is_human_system
from orchestrator.config import RuntimeConfig
from orchestrator.errors import (
    AttemptError,
    AttemptOutcome,
    ConfigError,
    ErpUnhealthy,
    InfraError,
    Phase,
    ServiceUnhealthy,
    TaskError,
    classify_exception,
    classify_turns,
    did_not_start,
)
from orchestrator.grading import grade_attempt
from orchestrator.hashing import file_sha256, workspace_sha256
from orchestrator.identity import AttemptIdentity
from orchestrator.in_thread import InThread
from orchestrator.integrity import AgentCausedError, ServiceDeath, TurnState, memory_note
from orchestrator.logs import AttemptLog, get_logger
from orchestrator.paths import AttemptPaths
from orchestrator.services.erp import ERP, ErpEndpoints, ErpLaunch, erp_service
from orchestrator.services.mcp import MCP, McpEndpoints, open_mcp
from orchestrator.trajectory.record import record_trajectory_safely

log = get_logger(__name__)


class Cancelled(InfraError):
    """The caller (a campaign shutting down) asked the attempt to stop."""


@dataclass
class AttemptResult:
    """The outcome of `run_attempt`, with the record it wrote."""

    run_id: str
    result: ResultRecord
    paths: AttemptPaths
    record: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.record = self.result.to_json()

    @property
    def attempt_id(self) -> str:
        """The attempt's id (its identity's), the same for every try."""
        return self.result.attempt_id

    @property
    def outcome(self) -> AttemptOutcome:
        return self.result.outcome

    @property
    def passed(self) -> bool:
        return self.result.passed

    @property
    def error(self) -> dict[str, Any] | None:
        return self.result.error.to_json() if self.result.error is not None else None


def run_attempt(
    spec: AttemptSpec,
    *,
    backend: Backend,
    task: TaskInput,
    scenario: ScenarioInput,
    root: Path | None = None,
    config: RuntimeConfig | None = None,
    cancel: threading.Event | None = None,
    grade: bool = True,
) -> AttemptResult:
    """Run one attempt of `spec` on `backend`, write its record under `root` (default config.runs_root).

    `task` and `scenario` are loaded by the caller (`orchestrator.inputs.load_inputs` for a cell
    of the task registry). When `cancel` is set the attempt stops at the next phase or turn
    boundary and ends as an infra_error ("cancelled").
    """
    config = config or getattr(backend, "config", None) or RuntimeConfig.from_env()
    root = Path(root) if root is not None else config.runs_root
    run = AttemptRun(spec, backend=backend, task=task, scenario=scenario, root=root, config=config, cancel=cancel, grade=grade)
    return run.run()


class AttemptRun:
    """One run of one attempt: one method per phase, over the state the record is built from."""

    def __init__(
        self,
        spec: AttemptSpec,
        *,
        backend: Backend,
        task: TaskInput,
        scenario: ScenarioInput,
        root: Path,
        config: RuntimeConfig,
        cancel: threading.Event | None,
        grade: bool,
    ) -> None:
        self.spec, self.backend, self.task, self.scenario, self.config = spec, backend, task, scenario, config
        self.cancel, self.do_grade = cancel, grade
        self.identity = AttemptIdentity.of(spec.cell, spec.seed, spec.rep, task.version)
        self.run_id = self.identity.new_run_id()
        self.paths = AttemptPaths.for_identity(root, spec.label, self.identity)
        self.clock = PhaseClock(self.run_id)
        self.resolved: Resolved | None = None
        self.sandbox: Sandbox | None = None
        self.control: ControlClient | None = None
        self.streamer: ControlStreamer | None = None
        self.erp: ErpEndpoints | None = None
        self.credentials: AttemptCredentials | None = None  # this attempt's fresh token secrets
        # What the record is built from, whatever happened.
        self.turn_records: list[TurnRecord] = []
        self.usage: dict[str, Any] = {}
        self.model: ModelRun | None = None  # the model gateway, for a system that calls a model
        self.human: HumanTurns | None = None  # the web UI, for turns worked by a person
        self.mcp: McpEndpoints | None = None  # the MCP server, for a cell of the mcp interface
        self.grade_report: Any = None
        self.grade_note: str | None = None
        self.hashes = Hashes()
        self.streams: dict[str, Any] = {}
        self.outcome: AttemptOutcome | None = None
        self.error: ErrorRecord | None = None
        self.teardown_problems: list[str] = []
        self.turn_windows: dict[int, tuple[float, float]] = {}  # each turn's wall-clock span (orchestrator/trajectory/)

    # -- the run -----------------------------------------------------------------------------------

    def run(self) -> AttemptResult:
        """All phases; teardown always; result.json last. See the module docstring."""
        t_start = time.monotonic()
        interrupted: BaseException | None = None
        # Lines are held until the attempt folder exists (after resolve), then go to runtime.jsonl.
        with AttemptLog(self.identity.attempt_id, run_id=self.run_id) as attempt_log:
            spec = self.spec
            log.info("attempt_started", cell=str(spec.cell), seed=spec.seed, rep=spec.rep, isolation=self.backend.isolation)
            early: BaseException | None = None
            try:
                with self.clock.phase(Phase.RESOLVE):
                    places = runtime_places(self.config, getattr(self.scenario, "dir", None))
                    policy_dir = self.config.container_paths.policy_dir
                    self.resolved = resolve(self.spec, self.task, self.scenario, places, policy_dir=policy_dir)
            except ConfigError:
                raise  # the user's input: nothing started, nothing recorded
            except Exception as exc:  # noqa: BLE001 — a task or scenario bug (e.g. ScenarioError): recorded below
                early = exc if isinstance(exc, AttemptError) else TaskError(f"{type(exc).__name__}: {exc}")
                early.__cause__ = exc if early is not exc else None
            self.paths.prepare()
            attempt_log.open(self.paths.runtime_log)
            try:
                if early is not None:
                    raise early
                self.write_identity()
                self.open()
                self.start_services()
                self.run_turns()
                self.freeze()
                self.grade()
                self.classify()
            except KeyboardInterrupt as exc:
                interrupted = exc
                self.outcome = "infra_error"
                message = f"interrupted ({exc or 'Ctrl-C'})"
                self.error = ErrorRecord(phase=self.clock.current.value, kind="interrupted", message=message)
            except BaseException as exc:  # noqa: BLE001 — every failure becomes a typed outcome
                self.fail(exc)
            finally:
                if self.teardown() and interrupted is None:
                    interrupted = KeyboardInterrupt("interrupted during teardown")
                self.clock.timings["total_s"] = time.monotonic() - t_start
            result = self._with_trajectory(self._safe_result_record())
            log.info("attempt_finished", outcome=result.outcome, passed=result.passed, duration_s=result.timings.get("total_s"))
            write_json(self.paths.result_json, result.to_json())  # last
        if interrupted is not None:
            raise interrupted
        return AttemptResult(self.run_id, result, self.paths)

    def checkpoint(self) -> None:
        """Stop here if the caller asked the attempt to (phase and turn boundaries)."""
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled("cancelled by the caller", phase=self.clock.current)

    @property
    def agent_token(self) -> str:
        """The agent's API token for this attempt (a fresh secret, never the scenario's)."""
        return str(self._require("credentials").agent_token)

    def _require(self, what: str) -> Any:
        value = getattr(self, what)
        if value is None:
            raise RuntimeError(f"phase order: {what} is not set up yet")
        return value

    # -- phases ------------------------------------------------------------------------------------

    def write_identity(self) -> None:
        """attempt.json: who runs what, where, with which settings."""
        spec, resolved = self.spec, self._require("resolved")
        record = AttemptRecord(
            identity=self.identity,
            run_id=self.run_id,
            label=spec.label,
            faults=resolved.faults,
            isolation=self.backend.isolation,
            backend=self.backend.describe(),
            timeout_override_s=spec.timeout_override_s,
            systems_file=str(spec.systems_file) if spec.systems_file else None,
            scenario_dir=str(getattr(self.scenario, "dir", "")),
            started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            config=self.config.model_dump(mode="json"),
            adapter=attempt_adapter(self),  # a command system's harness, model, effort and limits
        )
        write_json(self.paths.attempt_json, record.to_json())

    def open(self) -> None:
        """The backend prepared (once per backend object: reap, images), the sandbox opened."""
        with self.clock.phase(Phase.OPEN):
            self.checkpoint()
            self.backend.ensure_prepared()
            resolved = self.resolved
            turns = tuple(t.n for t in resolved.turns) if resolved is not None and not is_human_system(
                self.spec.cell.system) else ()
            self.sandbox = self.backend.open_attempt(AttemptContext(self.run_id, self.config.campaign, self.paths,
                                                                    turns=turns))

    def start_services(self) -> None:
        """The ERP up and healthy, its audit and fault streams followed, the handbook in place."""
        try:
            self._start_services()
        finally:  # time queued for host-wide start slots (orchestrator/admission.py), outside every deadline
            queued = getattr(self.sandbox, "queued_s", None) or {}
            self.clock.timings["services_queued_s"] = float(sum(queued.values()))

    def _start_services(self) -> None:
        with self.clock.phase(Phase.SERVICES):
            self.checkpoint()
            sandbox, resolved = self._require("sandbox"), self._require("resolved")
            token = secrets.token_hex(32)
            try:
                self.credentials = issue_credentials(Path(self.scenario.db), resolved.meta)
            except ValueError as exc:
                raise TaskError(f"scenario credentials: {exc}") from exc
            launch = ErpLaunch(
                db=Path(self.scenario.db), world=Path(self.scenario.world), control_token=token, faults=resolved.faults,
                token_secrets=self.credentials.token_secrets,
            )
            self.erp = ErpEndpoints.of(sandbox.start_service(erp_service(launch, self.config)))
            if resolved.turns and not is_human_system(self.spec.cell.system):
                sandbox.prepare_turn(resolved.turns[0].n)  # docker: its volume and keeper, beside the ERP's start
            sandbox.wait_service_healthy(ERP, error=ErpUnhealthy)
            self.control = ControlClient(self.erp.control_url, token, timeout_s=self.config.control_timeout_s)
            self.streamer = ControlStreamer(
                self.control, self.paths.audit_jsonl, self.paths.faults_jsonl,
                interval_s=self.config.stream_interval_s, idle_max_s=self.config.stream_idle_max_s,
            )
            self.streamer.start()
            sandbox.seed_workspace(Path(self.scenario.handbook_dir))
            self.model = open_for_attempt(self)  # the fake provider (if any) and the gateway
            self.human = open_human(self)  # the web UI, for a human cell
            self.mcp = open_mcp(self)

    def run_turns(self) -> None:
        """Every scripted turn, in order."""
        sandbox, resolved = self._require("sandbox"), self._require("resolved")
        with self.clock.phase(Phase.TURN):
            policy = sandbox.policy_path(resolved.mounts[0]) if self.spec.cell.is_policy and resolved.mounts else None
            system_json = resolved.system_json_for(policy) | ({"interface": self.spec.cell.interface} if self.mcp else {})
            for i, turn in enumerate(resolved.turns):
                self.checkpoint()
                following = resolved.turns[i + 1].n if i + 1 < len(resolved.turns) else None
                self.run_turn(turn, system_json, following)
            if self.human is not None:
                self.human.finish()

    def run_turn(self, turn: TurnScript, system_json: dict[str, Any], next_n: int | None = None) -> None:
        """One turn: clock advance, a fresh agent environment under the budget, the ERP checked."""
        sandbox, control = self._require("sandbox"), self._require("control")
        resolved, erp = self._require("resolved"), self._require("erp")
        cfg, paths, meta = self.config, self.paths, resolved.meta
        t_adv = time.monotonic()
        control.advance(turn.date, phase=Phase.TURN, timeout_s=cfg.advance_timeout_s)
        advance_s = time.monotonic() - t_adv
        budget = float(self.spec.timeout_override_s or turn.budget_s or cfg.default_turn_budget_s)
        context = {"turn": turn.n, "date": turn.date, "agent_user": meta.get("agent_user"), "budget_s": budget}
        files = {
            "prompt.txt": render_prompt(meta, turn.raw, interface=self.spec.cell.interface).encode("utf-8"),
            "system.json": (json.dumps(system_json, indent=1, sort_keys=True) + "\n").encode(),
            "context.json": (json.dumps(context, indent=1, sort_keys=True) + "\n").encode(),
        }
        env = {"ERP_URL": erp.agent_url, "ERP_TOKEN": self.agent_token, "TURN_BUDGET_S": f"{budget:g}"}
        if self.model is not None:
            env.update(self.model.before_turn(turn.n))  # the gateway's URL, the virtual key, the model
        if self.mcp is not None:
            env.update(self.mcp.turn_env())  # ERP_MCP_URL: the harness writes its MCP config from it
        launch = TurnLaunch(
            n=turn.n,
            files=files,
            env=env,
            budget_s=budget,
            host_turn_dir=paths.turn_dir(turn.n),
            log_path=paths.turn_log(turn.n),
            mounts=resolved.mounts,
            image=agent_image(self),
            cancel=self.cancel,  # the backend stops the turn within seconds of a cancel
            next_n=next_n,  # the backend may prepare the next turn while this one runs
            provider_wait=self.model.wait_of(turn.n) if self.model is not None else None,  # model_limits.py
        )
        turn_wall_start = time.time()
        if self.human is not None:  # the person ends the turn in the browser, or the budget does
            paths.turn_dir(turn.n).mkdir(parents=True, exist_ok=True)
            (paths.turn_dir(turn.n) / "prompt.txt").write_bytes(files["prompt.txt"])
            run = self.human.run_turn(turn.n, turn.date, str(turn.raw.get("request", "")),
                                      str(turn.raw.get("from_name") or turn.raw.get("from_user") or ""), budget)
        else:
            run = sandbox.run_turn(launch)
        self.turn_windows[turn.n] = (turn_wall_start, time.time())
        # Facts the agent cannot write decide who caused what (orchestrator.integrity): the state
        # of the services the agent talks to and the engine's events, never the turn's folders.
        failures: dict[str, tuple[ServiceUnhealthy, ServiceDeath | None]] = {}
        for name, error in ((ERP, ErpUnhealthy), *([(MCP, ServiceUnhealthy)] if self.mcp else [])):
            try:
                sandbox.check_service(name, error=error)
            except ServiceUnhealthy as exc:
                failures[name] = (exc, sandbox.service_death(name, since=turn_wall_start))
        erp_death = failures[ERP][1] if ERP in failures else None
        out = paths.turn_dir(turn.n) / "out"
        usage = read_json_object(out / "usage.json")
        reported = read_json_object(out / "turn.json")
        agent_usage, gateway_usage = None, None
        if self.model is not None:  # the gateway's figures, not what the agent says about itself
            agent_usage, gateway_usage = usage, self.model.after_turn(turn.n)
            usage = gateway_usage
        else:
            for k, v in usage.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    self.usage[k] = self.usage.get(k, 0) + v
        traceback_file = out / "traceback.txt"
        record = TurnRecord(
            n=turn.n,
            date=turn.date,
            budget_s=budget,
            exit_code=run.exit_code,
            # The entrypoint stopped the harness at the budget (exit 124), or the runtime killed
            # the whole turn at its hard deadline.
            timed_out=run.timed_out or bool(reported.get("timed_out")),
            killed_by_runtime=run.timed_out,
            duration_s=round(run.duration_s, 3),
            oom_killed=run.oom_killed,
            did_not_start=did_not_start(run.exit_code, run.duration_s, cfg.did_not_start_s),
            # Exit 125 with a traceback: the entrypoint could not set the turn up (our turn files,
            # the image, the policy module): the agent never ran, so this is not its failure.
            setup_failed=run.exit_code == 125 and traceback_file.exists(),
            notes=_turn_notes(run, erp_death, turn.n),
            advance_s=round(advance_s, 3),
            start_overhead_s=round(run.start_overhead_s, 3),
            cleanup_s=round(run.cleanup_s, 3),
            usage=usage,
            agent_usage=agent_usage,
            budget_exhausted=bool(gateway_usage and gateway_usage.get("budget_exhausted")),
            adapter=turn_adapter(self, budget, out),  # the limits applied, beside the observed usage
        )
        self.turn_records.append(record)
        with open(paths.turns_jsonl, "a", encoding="utf-8") as fh:
            fh.write(record.dumps() + "\n")
        self.checkpoint()  # a turn cut short by a cancel ends the attempt here, not as the agent's failure
        for failure, death in failures.values():
            # A service that died on its own during the turn died of the agent's requests (the only
            # traffic on its agent side); one the engine killed or stopped is the infrastructure's.
            if death is not None and death.agents_doing:
                raise AgentCausedError(death.reason(turn.n), phase=Phase.TURN, post_mortems=failure.post_mortems) from failure
            raise failure
        if gateway_usage is not None:
            ModelRun.check_outage(gateway_usage, turn.n)  # the provider's failure is never the agent's

    def freeze(self) -> None:
        """The grading date, a final flush and drain, the snapshot, services stopped, workspace out."""
        with self.clock.phase(Phase.FREEZE):
            self.checkpoint()
            sandbox, control, streamer, resolved = (self._require(k) for k in ("sandbox", "control", "streamer", "resolved"))
            control.advance(str(resolved.meta["grading_date"]), phase=Phase.FREEZE, timeout_s=self.config.advance_timeout_s)
            control.flush()
            streamer.drain()
            self.streams = {
                "audit_events": streamer.audit_count,
                "fault_records": streamer.faults_count,
                "poll_errors": streamer.poll_errors,
            }
            control.snapshot(self.paths.final_db, timeout_s=self.config.snapshot_timeout_s)
            rollback_journal(self.paths.final_db)
            if self.model is not None:
                self.usage = self.model.finish()  # the key revoked, the usage log drained
            # The services stop beside the copy-out and the hashes (nothing uses them after the
            # snapshot; the workspace is not theirs); the phase ends when both are done.
            stopping = InThread("stop-services", lambda: [sandbox.stop_service(name) for name in reversed(sandbox.services())])
            try:
                sandbox.copy_workspace(self.paths.workspace)
                hashes = Hashes(final_db=file_sha256(self.paths.final_db), canonical_db=canonical_or_none(self.paths.final_db),
                                workspace=workspace_sha256(self.paths.workspace))
            finally:
                stopping.wait()  # a stop's failure first: it comes first in the phase's order
            self.hashes = hashes

    def grade(self) -> None:
        """The grader on the host. Anything it raises is a bug of the task's checks (or of the
        grader), never the agent's or the infrastructure's: a task_error."""
        with self.clock.phase(Phase.GRADE):
            if not self.do_grade:
                self.grade_note = "grading skipped by the caller"
                return
            try:
                self.grade_report = grade_attempt(
                    self.task,
                    self.scenario,
                    final_db=self.paths.final_db,
                    audit_jsonl=self.paths.audit_jsonl,
                    faults_jsonl=self.paths.faults_jsonl,
                    workspace_dir=self.paths.workspace,
                    out_dir=self.paths.root,
                    condition=self.spec.cell.condition,
                )
            except AttemptError:
                raise
            except Exception as exc:
                raise TaskError(f"grading raised {type(exc).__name__}: {exc}") from exc

    def classify(self) -> None:
        """The agent's share of the outcome, from the turn records."""
        verdict = classify_turns(t.facts() for t in self.turn_records)
        self.outcome = verdict.outcome
        if verdict.reasons:
            self.error = ErrorRecord(phase=Phase.TURN.value, kind="agent_error", message="; ".join(verdict.reasons))

    def fail(self, exc: BaseException) -> None:
        """Record an exception that ended the attempt early, with the services' post-mortems."""
        self.outcome = classify_exception(exc)
        where = phase_of(exc, self.clock.current)
        post = list(getattr(exc, "post_mortems", []) or [])
        if self.sandbox is not None and where in (Phase.SERVICES, Phase.TURN, Phase.FREEZE):
            have = {p.name for p in post}
            post += [p for p in self.sandbox.post_mortems() if p.name not in have]
        self.error = ErrorRecord(
            phase=where.value,
            # cut short by the caller (a campaign stopping): resumed later, never the agent's doing
            kind="interrupted" if isinstance(exc, Cancelled) else self.outcome,
            exception=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback.format_exception(exc, limit=20)),
            post_mortem=[p.to_dict() for p in post],
        )
        log.warning("attempt_failed", outcome=self.outcome, phase=where.value, error=type(exc).__name__, message=str(exc))

    def teardown(self) -> bool:
        """Stop the streams, close the client, remove the sandbox. True if an interrupt came
        meanwhile (a second Ctrl-C during teardown is held until it is done)."""
        with self.clock.phase(Phase.TEARDOWN), deferred_interrupts() as pending:
            if self.streamer is not None:
                self.streamer.stop()
            if self.control is not None:
                self.control.close()
            if self.model is not None:
                self.model.close()
            if self.sandbox is not None:
                try:
                    self.teardown_problems = self.sandbox.close()
                except Exception as exc:  # noqa: BLE001 — close() should not raise; record it if it does
                    self.teardown_problems = [f"close raised {exc!r}"]
        return bool(pending)

    # -- the record --------------------------------------------------------------------------------

    def _safe_result_record(self) -> ResultRecord:
        """`result_record()`, or, if what the phases left does not validate (our bug), an infra_error record saying so."""
        try:
            return self.result_record()
        except ValidationError as exc:
            log.error("result_record_invalid", error=str(exc))
            self.outcome, self.grade_report = "infra_error", None
            self.error = ErrorRecord(phase=Phase.GRADE.value, kind="infra_error", exception="ValidationError", message=str(exc))
            self.turn_records = [t for t in self.turn_records if isinstance(t, TurnRecord)]
            return self.result_record()

    def _with_trajectory(self, result: ResultRecord) -> ResultRecord:
        """trajectory.json beside the result, the transcript checked against the gateway's usage log (issue 32)."""
        digest, mismatch, problems = record_trajectory_safely(self.paths.root, result.to_json(), windows=self.turn_windows,
                                                              grading_date=getattr(self.resolved, "meta", {}).get("grading_date"))
        return result.model_copy(update={"transcript_mismatch": mismatch, "teardown_problems": result.teardown_problems + problems,
                                         "hashes": result.hashes.model_copy(update={"trajectory": digest})})

    def result_record(self) -> ResultRecord:
        """result.json from what the phases left."""
        spec, grade = self.spec, self.grade_report
        gd: dict[str, Any] = grade.to_dict() if grade is not None else {}
        outcome: AttemptOutcome = self.outcome or "infra_error"
        return ResultRecord(
            identity=self.identity,
            run_id=self.run_id,
            label=spec.label,
            isolation=self.backend.isolation,
            outcome=outcome,
            graded=grade is not None,
            # Only a clean, graded attempt can pass; an agent error is the agent's failure.
            passed=bool(outcome == "graded" and grade is not None and grade.passed),
            breach=bool(gd.get("breach", False)),
            checks=gd.get("checks", []),
            breaches=gd.get("breaches", []),
            probes=gd.get("probes", 0),
            writes=gd.get("writes", {}),
            fault_metrics=gd.get("fault_metrics"),
            turns=self.turn_records,
            usage=self.usage,
            timings={k: round(v, 3) for k, v in self.clock.timings.items()},
            hashes=self.hashes,
            streams=self.streams,
            grade_note=self.grade_note,
            grade_passed=bool(gd.get("passed", False)) if gd else None,
            error=self.error,
            teardown_problems=self.teardown_problems,
        )


def _turn_notes(run: Any, erp_death: ServiceDeath | None, n: int) -> list[str]:
    """What the turn record says beside its exit: a memory kill inside a normal turn, what the
    copy-out cut or skipped, how the ERP ended."""
    notes: list[str] = []
    note = memory_note(TurnState(run.exit_code, bool(run.oom_killed), bool(run.timed_out)))
    if note:
        notes.append(note)
    notes += [str(n) for n in (run.detail or {}).get("notes") or []]  # e.g. how a person's turn ended
    skipped = (run.detail or {}).get("skipped") or []
    if skipped:
        shown = "; ".join(skipped[:5]) + (f"; and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        notes.append(f"copy-out of the turn's folder cut or skipped {len(skipped)} item(s): {shown}")
    if erp_death is not None:
        notes.append(erp_death.reason(n))
    return notes

