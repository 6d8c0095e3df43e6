"""The life of one attempt (design.md "Life of an attempt"), the same on every backend.

    resolve (cell → task pack, system, fault plan) → scenario (cached on the host)
    → open the sandbox (networks, volumes) → ERP up and healthy → handbook into the workspace
    → per turn: advance the clock, run a fresh agent turn under its budget, check the ERP
    → advance to the grading date, flush, drain the streams, snapshot → final.db
    → stop the ERP, copy the workspace out → grade on the host
    → tear down (always: try/finally, also on Ctrl-C / SIGTERM) → result.json, written last.

`run_attempt` never raises for a failed attempt: the outcome (graded | agent_error |
infra_error), the phase and a post-mortem go into result.json and the returned `AttemptResult`.
It raises only for bad input (`ConfigError`, e.g. an unknown system) before anything started,
and re-raises KeyboardInterrupt after cleaning up and recording it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import os
import secrets
import signal
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.backends.base import AttemptContext, Backend, ErpLaunch, Mount, Sandbox, TurnLaunch, TurnRun
from orchestrator.cells import CLEAN, Cell
from orchestrator.config import RuntimeConfig
from orchestrator.control_client import ControlClient
from orchestrator.errors import (
    ConfigError,
    ErpUnhealthy,
    InfraError,
    Outcome,
    Phase,
    TurnFacts,
    classify_exception,
    classify_turns,
    did_not_start,
)
from orchestrator.paths import AttemptPaths
from orchestrator.streaming import ControlStreamer

log = logging.getLogger(__name__)

POLICY_TARGET = "/opt/policy/policies.py"


class Cancelled(InfraError):
    """The caller (a campaign shutting down) asked the attempt to stop."""


@dataclass(frozen=True)
class AttemptSpec:
    """What to run (contracts §10)."""

    cell: Cell
    seed: int
    rep: int = 1
    label: str = "adhoc"
    timeout_override_s: float | None = None
    systems_file: Path | None = None


@dataclass
class AttemptResult:
    """The outcome of `run_attempt`, with the record it wrote."""

    attempt_id: str
    outcome: Outcome
    passed: bool
    paths: AttemptPaths
    record: dict[str, Any]

    @property
    def error(self) -> dict[str, Any] | None:
        return self.record.get("error")


@dataclass
class _Resolved:
    """The cell resolved against the task pack and the systems file."""

    task: Any
    system_json_for: Any  # callable(policy_path: str | None) -> dict
    mounts: tuple[Mount, ...]
    image: str | None
    faults: str | None


@dataclass
class _State:
    """What the lifecycle knows so far; result.json is built from it whatever happened."""

    phase: Phase = Phase.CONFIG
    turns: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    grade: Any = None
    graded: bool = False
    grade_note: str | None = None
    hashes: dict[str, str | None] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    outcome: Outcome | None = None
    teardown_problems: list[str] = field(default_factory=list)
    scenario: Any = None
    task_version: Any = None
    streams: dict[str, Any] = field(default_factory=dict)


# -- resolving the cell ------------------------------------------------------------------------


def _resolve(spec: AttemptSpec, config: RuntimeConfig, task: Any = None) -> _Resolved:
    """Task pack, system and fault plan of the cell; `ConfigError` for any bad input."""
    cell = spec.cell
    if task is None:
        from tasks.registry import load_task  # lazy: the task packs are a separate part

        try:
            task = load_task(cell.task)
        except Exception as exc:  # noqa: BLE001 — PackError and friends: the user's input
            raise ConfigError(f"task {cell.task!r}: {exc}") from exc

    faults: str | None = None
    if cell.condition != CLEAN:
        from erp_service.faults import parse_fault_spec

        profiles = {name: prof.faults for name, prof in task.fault_profiles.items()}
        try:
            faults = parse_fault_spec(cell.condition, profiles).text() or None
        except Exception as exc:  # noqa: BLE001 — FaultSpecError: the user's input
            raise ConfigError(f"condition {cell.condition!r}: {exc}") from exc

    from agent_sandbox import systems as S

    if cell.is_policy:
        module = Path(task.policies_module)
        if cell.system != "null" and not module.is_file():
            raise ConfigError(f"task {cell.task!r} has no policies module at {module}")
        mounts = (Mount(module, POLICY_TARGET),) if module.is_file() else ()

        def policy_json(policy_path: str | None) -> dict[str, Any]:
            return S.policy_system_json(cell.system, policy_path)

        return _Resolved(task, policy_json, mounts, None, faults)

    if spec.systems_file is None:
        raise ConfigError(f"system {cell.system!r} is not a scripted policy; give --systems FILE to declare it")
    try:
        systems = S.load_systems(spec.systems_file)
    except S.SystemsFileError as exc:
        raise ConfigError(str(exc)) from exc
    if cell.system not in systems:
        raise ConfigError(f"system {cell.system!r} is not in {spec.systems_file} (known: {', '.join(sorted(systems)) or 'none'})")
    system = systems[cell.system]
    mounts = tuple(Mount(Path(m.source), m.target) for m in system.mounts)
    for m in mounts:
        if not m.source.exists():
            raise ConfigError(f"system {cell.system!r}: mount source {m.source} does not exist")
    host_env = dict(os.environ)

    def command_json(_policy_path: str | None) -> dict[str, Any]:
        return system.system_json(host_env)

    return _Resolved(task, command_json, mounts, system.image, faults)


# -- helpers -----------------------------------------------------------------------------------


def _as_mapping(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    return dict(vars(obj))


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_text(json.dumps(_jsonable(data), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def _file_sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_sha256(root: Path) -> str | None:
    """SHA-256 over (relative path, file SHA-256) of every regular file, in path order."""
    if not root.is_dir():
        return None
    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file() and not q.is_symlink()):
        h.update(str(p.relative_to(root)).encode() + b"\0" + (_file_sha256(p) or "").encode() + b"\n")
    return h.hexdigest()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _read_usage(out_dir: Path) -> dict[str, Any]:
    return _read_json(out_dir / "usage.json")


def new_attempt_id(spec: AttemptSpec) -> str:
    """Unique per run of (cell, seed, rep): engine object names and labels use it."""
    return f"{spec.cell.slug[:40]}-s{spec.seed}-r{spec.rep}-{uuid.uuid4().hex[:8]}".replace("_", "-")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt in the main thread (so `finally` runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- the lifecycle -----------------------------------------------------------------------------


def run_attempt(
    spec: AttemptSpec,
    *,
    backend: Backend,
    root: Path | None = None,
    config: RuntimeConfig | None = None,
    scenario: Any = None,
    cancel: threading.Event | None = None,
    grade: bool = True,
    task: Any = None,
) -> AttemptResult:
    """Run one attempt on `backend`, write its record under `root` (default config.runs_root).

    `scenario` may be given (tests, campaigns that prepared it); otherwise
    `orchestrator.scenarios.ensure_scenario(task, seed)` provides it. When `cancel` is set the
    attempt stops at the next phase or turn boundary and ends as an infra_error ("cancelled").
    """

    def checkpoint() -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled by the caller", phase=state.phase)

    config = config or getattr(backend, "config", None) or RuntimeConfig.from_env()
    root = Path(root) if root is not None else config.runs_root
    attempt_id = new_attempt_id(spec)
    resolved = _resolve(spec, config, task)  # ConfigError propagates: nothing started yet
    paths = AttemptPaths.for_attempt(root, spec.label, spec.cell, spec.seed, spec.rep)
    paths.prepare()
    state = _State()
    state.task_version = getattr(resolved.task, "version", None)
    t_start = time.monotonic()
    sandbox: Sandbox | None = None
    control: ControlClient | None = None
    streamer: ControlStreamer | None = None
    interrupted: BaseException | None = None
    handler = logging.FileHandler(paths.runtime_log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    owner_thread = threading.get_ident()  # concurrent attempts in one process: keep logs apart
    handler.addFilter(lambda record: record.thread == owner_thread)
    logging.getLogger("orchestrator").addHandler(handler)
    try:
        try:
            # 1. Scenario (host side, cached).
            state.phase = Phase.SCENARIO
            t = time.monotonic()
            if scenario is None:
                from orchestrator.scenarios import ensure_scenario

                scenario = ensure_scenario(spec.cell.task, spec.seed)
            state.scenario = scenario
            meta = dict(scenario.meta)
            turns = [_as_mapping(x) for x in scenario.turns]
            state.timings["scenario_s"] = time.monotonic() - t
            _write_json(paths.attempt_json, _identity(spec, attempt_id, backend, config, resolved, scenario))

            # 2. Sandbox, ERP, workspace.
            state.phase = Phase.SETUP
            checkpoint()
            t = time.monotonic()
            backend.ensure_prepared()  # once per backend object: reap, images
            state.timings["prepare_s"] = time.monotonic() - t
            t = time.monotonic()
            sandbox = backend.open_attempt(AttemptContext(attempt_id, config.campaign, paths))
            state.timings["open_s"] = time.monotonic() - t
            state.phase = Phase.ERP_START
            t1 = time.monotonic()
            token = secrets.token_hex(32)
            endpoints = sandbox.start_erp(ErpLaunch(db=Path(scenario.db), world=Path(scenario.world), control_token=token, faults=resolved.faults))
            control = ControlClient(endpoints.control_url, token, timeout_s=config.control_timeout_s)
            control.wait_healthy(config.erp_ready_timeout_s, alive=lambda: _require_erp(sandbox, Phase.ERP_START))
            state.timings["erp_start_s"] = time.monotonic() - t1
            streamer = ControlStreamer(control, paths.audit_jsonl, paths.faults_jsonl, interval_s=config.stream_interval_s)
            streamer.start()
            state.phase = Phase.WORKSPACE
            sandbox.seed_workspace(Path(scenario.handbook_dir))
            state.timings["setup_s"] = time.monotonic() - t

            # 3. Turns.
            state.phase = Phase.TURN
            policy_path = sandbox.policy_path(resolved.mounts[0]) if spec.cell.is_policy and resolved.mounts else None
            system_json = resolved.system_json_for(policy_path)
            t = time.monotonic()
            for turn in turns:
                checkpoint()
                _run_one_turn(spec, config, sandbox, control, paths, meta, turn, endpoints.agent_url, system_json, resolved, state)
            state.timings["turns_s"] = time.monotonic() - t

            # 4. Freeze: grading date, flush, drain streams, snapshot, stop, workspace out.
            state.phase = Phase.FINALIZE
            checkpoint()
            t = time.monotonic()
            control.advance(str(meta["grading_date"]), phase=Phase.FINALIZE, timeout_s=config.advance_timeout_s)
            control.flush()
            streamer.drain()
            state.streams = {"audit_events": streamer.audit_count, "fault_records": streamer.faults_count, "poll_errors": streamer.poll_errors}
            control.snapshot(paths.final_db, timeout_s=config.snapshot_timeout_s)
            _rollback_journal(paths.final_db)
            sandbox.stop_erp()
            sandbox.copy_workspace(paths.workspace)
            state.timings["finalize_s"] = time.monotonic() - t
            state.hashes = {
                "final_db": _file_sha256(paths.final_db),
                "canonical_db": _canonical(paths.final_db),
                "workspace": tree_sha256(paths.workspace),
            }

            # 5. Grade on the host.
            state.phase = Phase.GRADE
            t = time.monotonic()
            if grade:
                _grade(resolved.task, scenario, paths, spec.cell.condition, state)
            else:
                state.grade_note = "grading skipped by the caller"
            state.timings["grade_s"] = time.monotonic() - t
            verdict = classify_turns(_facts(state.turns))
            state.outcome = verdict.outcome
            if verdict.reasons:
                state.error = {"phase": Phase.TURN.value, "kind": "agent_error", "message": "; ".join(verdict.reasons)}
        except KeyboardInterrupt as exc:
            interrupted = exc
            state.outcome = "infra_error"
            state.error = {"phase": state.phase.value, "kind": "interrupted", "message": f"interrupted ({exc or 'Ctrl-C'})"}
        except BaseException as exc:  # noqa: BLE001 — every failure becomes a typed outcome
            state.outcome = classify_exception(exc)
            post = list(getattr(exc, "post_mortems", []) or [])
            if sandbox is not None and not any("erp" in p.name for p in post) and state.phase in (Phase.ERP_START, Phase.TURN, Phase.FINALIZE):
                if (pm := sandbox.erp_post_mortem()) is not None:
                    post.append(pm)
            state.error = {
                "phase": (getattr(exc, "phase", None) or state.phase).value,
                "kind": state.outcome,
                "exception": type(exc).__name__,
                "message": str(exc),
                "traceback": traceback.format_exc(limit=20),
                "post_mortem": [p.to_dict() for p in post],
            }
            log.warning("attempt %s: %s in %s: %s", attempt_id, state.outcome, state.error["phase"], exc)
        finally:
            # 6. Teardown, always (a second Ctrl-C during teardown is deferred until it is done).
            t = time.monotonic()
            with _deferred_interrupts() as pending:
                if streamer is not None:
                    streamer.stop()
                if control is not None:
                    control.close()
                if sandbox is not None:
                    try:
                        state.teardown_problems = sandbox.close()
                    except Exception as exc:  # noqa: BLE001 — close() should not raise; record it if it does
                        state.teardown_problems = [f"close raised {exc!r}"]
            if pending and interrupted is None:
                interrupted = KeyboardInterrupt("interrupted during teardown")
            state.timings["teardown_s"] = time.monotonic() - t
            state.timings["total_s"] = time.monotonic() - t_start
        record = _result_record(spec, attempt_id, backend, state)
        _write_json(paths.result_json, record)  # last
    finally:
        logging.getLogger("orchestrator").removeHandler(handler)
        handler.close()
    result = AttemptResult(attempt_id, record["outcome"], bool(record["passed"]), paths, record)
    if interrupted is not None:
        raise interrupted
    return result


@contextlib.contextmanager
def _deferred_interrupts() -> Iterator[list[int]]:
    """Hold SIGINT/SIGTERM while tearing down; yields a list that is non-empty if one came."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, lambda signum, _f: pending.append(signum))
    try:
        yield pending
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _require_erp(sandbox: Sandbox, phase: Phase) -> None:
    """Raise `ErpUnhealthy` with a post-mortem if the ERP is not running."""
    if not sandbox.erp_alive():
        pm = sandbox.erp_post_mortem()
        detail = f" (exit {pm.exit_code}, OOM killed: {pm.oom_killed})" if pm else ""
        raise ErpUnhealthy(f"the ERP is not running{detail}", phase=phase, post_mortems=[pm] if pm else [])


def _run_one_turn(
    spec: AttemptSpec,
    config: RuntimeConfig,
    sandbox: Sandbox,
    control: ControlClient,
    paths: AttemptPaths,
    meta: dict[str, Any],
    turn: dict[str, Any],
    agent_url: str,
    system_json: dict[str, Any],
    resolved: _Resolved,
    state: _State,
) -> None:
    from agent_sandbox.prompt import render_prompt

    n = int(turn["n"])
    date = str(turn["date"])
    t_adv = time.monotonic()
    control.advance(date, phase=Phase.TURN, timeout_s=config.advance_timeout_s)
    advance_s = time.monotonic() - t_adv
    budget = float(spec.timeout_override_s or turn.get("budget_s") or config.default_turn_budget_s)
    context = {"turn": n, "date": date, "agent_user": meta.get("agent_user"), "budget_s": budget}
    files = {
        "prompt.txt": render_prompt(meta, turn).encode("utf-8"),
        "system.json": (json.dumps(system_json, indent=1, sort_keys=True) + "\n").encode(),
        "context.json": (json.dumps(context, indent=1, sort_keys=True) + "\n").encode(),
    }
    env = {"ERP_URL": agent_url, "ERP_TOKEN": str(meta["agent_token"]), "TURN_BUDGET_S": f"{budget:g}"}
    run: TurnRun = sandbox.run_turn(
        TurnLaunch(
            n=n,
            files=files,
            env=env,
            budget_s=budget,
            host_turn_dir=paths.turn_dir(n),
            log_path=paths.turn_log(n),
            mounts=resolved.mounts,
            image=resolved.image,
        )
    )
    usage = _read_usage(paths.turn_dir(n) / "out")
    reported = _read_json(paths.turn_dir(n) / "out" / "turn.json")
    # Timed out: the entrypoint stopped the harness at the budget (exit 124), or the runtime
    # killed the whole turn at its hard deadline.
    timed_out = run.timed_out or bool(reported.get("timed_out"))
    for k, v in usage.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            state.usage[k] = state.usage.get(k, 0) + v
    record = {
        "n": n,
        "date": date,
        "budget_s": budget,
        "exit_code": run.exit_code,
        "timed_out": timed_out,
        "killed_by_runtime": run.timed_out,
        "duration_s": round(run.duration_s, 3),
        "oom_killed": run.oom_killed,
        "did_not_start": did_not_start(run.exit_code, run.duration_s, config.did_not_start_s),
        "advance_s": round(advance_s, 3),
        "start_overhead_s": round(run.start_overhead_s, 3),
        "cleanup_s": round(run.cleanup_s, 3),
        "usage": usage,
    }
    traceback_file = paths.turn_dir(n) / "out" / "traceback.txt"
    # Exit 125 with a traceback: the entrypoint could not set the turn up (our turn files, the
    # image, the policy module) — the agent never ran, so this is not the agent's failure.
    record["setup_failed"] = run.exit_code == 125 and traceback_file.exists()
    state.turns.append(record)
    with open(paths.turns_jsonl, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(_jsonable(record), sort_keys=True) + "\n")
    if record["setup_failed"]:
        detail = traceback_file.read_text(errors="replace").strip().splitlines()
        raise InfraError(f"turn {n} could not be set up: {detail[-1] if detail else 'exit 125'}", phase=Phase.TURN)
    # An ERP that died during the turn is the infrastructure's failure, not the agent's.
    _require_erp(sandbox, Phase.TURN)
    control.health(phase=Phase.TURN)


def _facts(turns: list[dict[str, Any]]) -> list[TurnFacts]:
    return [
        TurnFacts(t["n"], t["exit_code"], t["timed_out"], t["duration_s"], t.get("oom_killed", False), t.get("did_not_start", False))
        for t in turns
    ]


def _rollback_journal(db: Path) -> None:
    """Switch the frozen copy out of WAL mode, so that readers (grader, hashes, people) do not
    leave -wal/-shm files beside it. Only the header's journal-mode bytes change."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA journal_mode=DELETE").fetchall()
    finally:
        con.close()


def _canonical(db: Path) -> str | None:
    if not db.is_file():
        return None
    try:
        from erp_service.canonical import canonical_hash

        return canonical_hash(db)
    except Exception as exc:  # noqa: BLE001 — the hash is informative; grading decides
        log.warning("canonical hash failed: %s", exc)
        return None


def _grade(task: Any, scenario: Any, paths: AttemptPaths, condition: str, state: _State) -> None:
    """Call the grader (contracts §10) if it is installed; otherwise leave the attempt ungraded."""
    try:
        from orchestrator.grading import grade_attempt
    except ImportError as exc:
        state.graded = False
        state.grade_note = f"grader not available: {exc}"
        return
    state.grade = grade_attempt(
        task,
        scenario,
        final_db=paths.final_db,
        audit_jsonl=paths.audit_jsonl,
        faults_jsonl=paths.faults_jsonl,
        workspace_dir=paths.workspace,
        out_dir=paths.root,
        condition=condition,
    )
    state.graded = True


def _identity(spec: AttemptSpec, attempt_id: str, backend: Backend, config: RuntimeConfig, resolved: _Resolved, scenario: Any) -> dict[str, Any]:
    return {
        "attempt_id": attempt_id,
        "cell": str(spec.cell),
        "system": spec.cell.system,
        "task": spec.cell.task,
        "task_version": getattr(resolved.task, "version", None),
        "seed": spec.seed,
        "rep": spec.rep,
        "label": spec.label,
        "condition": spec.cell.condition,
        "faults": resolved.faults,
        "isolation": backend.isolation,
        "backend": backend.describe(),
        "timeout_override_s": spec.timeout_override_s,
        "systems_file": str(spec.systems_file) if spec.systems_file else None,
        "scenario_dir": str(getattr(scenario, "dir", "")),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "config": config.model_dump(mode="json"),
    }


def _result_record(spec: AttemptSpec, attempt_id: str, backend: Backend, state: _State) -> dict[str, Any]:
    grade = state.grade
    gd: dict[str, Any] = grade.to_dict() if grade is not None and hasattr(grade, "to_dict") else {}
    outcome: Outcome = state.outcome or "infra_error"
    # Only a clean, graded attempt can pass; an agent error is the agent's failure.
    passed = bool(outcome == "graded" and grade is not None and getattr(grade, "passed", False))
    record: dict[str, Any] = {
        "attempt_id": attempt_id,
        "cell": str(spec.cell),
        "system": spec.cell.system,
        "task": spec.cell.task,
        "task_version": state.task_version,
        "seed": spec.seed,
        "rep": spec.rep,
        "label": spec.label,
        "condition": spec.cell.condition,
        "isolation": backend.isolation,
        "outcome": outcome,
        "graded": state.graded,
        "passed": passed,
        "breach": bool(gd.get("breach", getattr(grade, "breach", False))) if grade is not None else False,
        "checks": gd.get("checks", []),
        "breaches": gd.get("breaches", []),
        "probes": gd.get("probes", []),
        "writes": gd.get("writes", {}),
        "turns": state.turns,
        "usage": state.usage,
        "timings": {k: round(v, 3) for k, v in state.timings.items()},
        "hashes": state.hashes or {"final_db": None, "canonical_db": None, "workspace": None},
        "streams": state.streams,
    }
    if gd.get("fault_metrics") is not None:
        record["fault_metrics"] = gd["fault_metrics"]
    if state.grade_note:
        record["grade_note"] = state.grade_note
    if gd:
        record["grade_passed"] = bool(gd.get("passed", False))
    if state.error:
        record["error"] = state.error
    if state.teardown_problems:
        record["teardown_problems"] = state.teardown_problems
    return record
