"""The resolve phase: the cell against its task pack, the systems file and the scenario.

Bad input of the user (an unknown system, a broken systems file, an unknown condition) is a
`ConfigError`, raised before anything starts. A broken task pack or scenario (no policies module
for a scripted policy, a scenario without a grading date or agent token, a turn without a date)
is a `TaskError`: the attempt is recorded as `task_error`.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox import systems as S
from erp_service.faults import FaultSpecError, parse_fault_spec
from orchestrator.attempt.mounts import ProtectedPlace, check_system_mounts, runtime_places
from orchestrator.attempt.records import AttemptSpec, ScenarioInput, TaskInput
from orchestrator.backends.base import Mount
from orchestrator.cells import CLEAN
from orchestrator.config import ContainerPaths
from orchestrator.errors import ConfigError, TaskError

REQUIRED_META = ("grading_date", "agent_token", "agent_user")


@dataclass(frozen=True)
class TurnScript:
    """One scripted turn of the scenario (turns.yaml), as the attempt needs it."""

    n: int
    date: str
    budget_s: float | None
    raw: dict[str, Any]  # everything turns.yaml says (the prompt renders from it)


@dataclass(frozen=True)
class Resolved:
    """The cell resolved: how the turn runs the system, and under which faults."""

    system_json_for: Callable[[str | None], dict[str, Any]]  # policy path (as the turn sees it) -> system.json
    mounts: tuple[Mount, ...]
    image: str | None
    faults: str | None
    meta: dict[str, Any]
    turns: tuple[TurnScript, ...]
    system: S.SystemSpec | None = None  # the command system (None for a scripted policy)


def resolve(spec: AttemptSpec, task: TaskInput, scenario: ScenarioInput,
            places: tuple[ProtectedPlace, ...] | None = None, *, policy_dir: str = ContainerPaths().policy_dir) -> Resolved:
    """Resolve `spec` against `task` and `scenario`; `ConfigError` / `TaskError` as described above.
    A systems file's mounts are refused when their host side would show a protected place
    (`places`, default `mounts.runtime_places()`) or the host itself to the agent. A scripted
    policy's module is mounted as `<policy_dir>/policies.py`."""
    faults = _faults(spec, task)
    meta, turns = _scenario(scenario)
    cell = spec.cell
    if cell.is_policy:
        # The alt policy is its own file, mounted alone: it cannot reach the oracle's decisions.
        module = Path(task.alt_module if cell.system == "alt" else task.policies_module)
        if cell.system != "null" and not module.is_file():
            raise TaskError(f"task {cell.task!r} has no policies module at {module}")
        mounts: tuple[Mount, ...] = (Mount(module, f"{policy_dir}/policies.py"),) if module.is_file() else ()

        def policy_json(policy_path: str | None) -> dict[str, Any]:
            return S.policy_system_json(cell.system, policy_path)

        return Resolved(policy_json, mounts, None, faults, meta, turns)
    if cell.is_human:  # a person in the browser (orchestrator/attempt/human_turns.py): no agent container
        return Resolved(lambda _policy: {"kind": "human", "name": cell.system}, (), None, faults, meta, turns)

    builtin = S.builtin_system(cell.system)
    if spec.systems_file is None and builtin is None:
        raise ConfigError(f"system {cell.system!r} is not a scripted policy; give --systems FILE to declare it")
    try:
        systems = S.load_systems(spec.systems_file) if spec.systems_file is not None else {}
    except S.SystemsFileError as exc:
        raise ConfigError(str(exc)) from exc
    if builtin is not None:
        systems[cell.system] = builtin  # claude-code, codex (a systems file cannot shadow them)
    if cell.system not in systems:
        known = ", ".join(sorted(systems)) or "none"
        raise ConfigError(f"system {cell.system!r} is not in {spec.systems_file} (known: {known})")
    system = systems[cell.system]
    if system.calls_model and spec.model_access is None:
        raise ConfigError(f"system {cell.system!r} calls a model: give --model-access FILE "
                          "(see agent_sandbox/examples/model-access.yaml)")
    mounts = tuple(Mount(Path(m.source), m.target) for m in system.mounts)
    for m in mounts:
        if not m.source.exists():
            raise ConfigError(f"system {cell.system!r}: mount source {m.source} does not exist")
    check_system_mounts(cell.system, mounts, places if places is not None else runtime_places())
    host_env = dict(os.environ)

    def command_json(_policy_path: str | None) -> dict[str, Any]:
        return system.system_json(host_env)

    return Resolved(command_json, mounts, system.image, faults, meta, turns, system)


def _faults(spec: AttemptSpec, task: TaskInput) -> str | None:
    if spec.cell.condition == CLEAN:
        return None
    profiles = {name: prof.faults for name, prof in task.fault_profiles.items()}
    try:
        return parse_fault_spec(spec.cell.condition, profiles).text() or None
    except FaultSpecError as exc:
        raise ConfigError(f"condition {spec.cell.condition!r}: {exc}") from exc


def _as_mapping(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "model_dump"):
        return dict(obj.model_dump(mode="json"))
    return dict(vars(obj))


def _scenario(scenario: ScenarioInput) -> tuple[dict[str, Any], tuple[TurnScript, ...]]:
    """The scenario's meta and turn script, checked: a gap here is the task's bug."""
    meta = dict(scenario.meta)
    missing = [k for k in REQUIRED_META if not meta.get(k)]
    if missing:
        raise TaskError(f"scenario.json lacks {', '.join(missing)}")
    turns: list[TurnScript] = []
    for i, item in enumerate(scenario.turns, start=1):
        raw = _as_mapping(item)
        try:
            n, date = int(raw["n"]), str(raw["date"])
            budget = float(raw["budget_s"]) if raw.get("budget_s") is not None else None
        except (KeyError, TypeError, ValueError) as exc:
            raise TaskError(f"turns.yaml entry {i} is malformed ({type(exc).__name__}: {exc}): {raw}") from exc
        turns.append(TurnScript(n, date, budget, raw))
    if not turns:
        raise TaskError("turns.yaml has no turns")
    return meta, tuple(turns)
