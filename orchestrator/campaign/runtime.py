"""The campaign's bridge to the attempt runtime, task packs and systems (all imported lazily).

The runtime (`orchestrator.attempt`, `orchestrator.backends`), the task registry and the systems
file belong to other parts; this module is the only place the campaign touches them, so the
pure parts of a campaign (identity, ledger, metrics, reports) work and test without them.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from orchestrator.campaign.declaration import read_result
from orchestrator.campaign.limits import EngineLimits, LimitedBackend
from orchestrator.campaign.scheduler import AttemptJob, write_orchestrator_failure
from orchestrator.campaign.spec import CampaignSpecError
from orchestrator.cells import Cell
from orchestrator.hashing import canonical_json, tree_sha256
from orchestrator.identity import AttemptIdentity


def task_info(slugs: list[str]) -> dict[str, dict[str, Any]]:
    """`{slug: {"version", "tree_sha256", "parent"}}` for each task; errors name the task."""
    from tasks.registry import load_task

    out: dict[str, dict[str, Any]] = {}
    for slug in sorted(set(slugs)):
        try:
            pack = load_task(slug)
        except Exception as exc:
            raise CampaignSpecError(f"cells: task {slug!r}: {exc}") from None
        h = hashlib.sha256()
        chain = [pack]
        while chain[-1].variant_of:  # a variant runs its parent's generator: both trees matter
            chain.append(load_task(chain[-1].variant_of))
        for p in chain:
            h.update(p.slug.encode() + b"\0" + tree_sha256(Path(p.dir)).encode())
        out[slug] = {"version": str(pack.version), "tree_sha256": h.hexdigest(), "variant_of": pack.variant_of}
    return out


def check_policies(cells: list[Cell]) -> None:
    """Refuse negative controls a task does not declare (before anything starts).

    A control is declared in the task's `negative_controls`, or in the `negative_controls` of the
    fault profile the cell's condition names (e.g. `neg:blind-retry` under `lost-writes`).
    """
    from tasks.registry import load_task

    for cell in cells:
        if not cell.system.startswith("neg:"):
            continue
        task = load_task(cell.task)
        declared = set(task.negative_controls)
        profile = task.fault_profiles.get(cell.condition)
        if profile is not None:
            declared |= set(getattr(profile, "negative_controls", {}) or {})
        bare = cell.system.split(":", 1)[1]
        if cell.system not in declared and bare not in declared:
            known = ", ".join(sorted(n if n.startswith("neg:") else f"neg:{n}" for n in declared)) or "none"
            raise CampaignSpecError(
                f"cells: {cell.text}: task {cell.task!r} declares no negative control {cell.system!r} "
                f"under condition {cell.condition!r} (known: {known})"
            )


def systems_identity(cells: list[Cell], systems_file: str | None, model_access: str | None = None) -> dict[str, Any]:
    """What each system of the campaign is: a policy, or the hash of its command definition.

    A changed definition of a command system used by the campaign makes it a different campaign;
    other entries of the systems file do not matter.
    """
    out: dict[str, Any] = {}
    commands = sorted({c.system for c in cells if not c.is_policy})
    for c in cells:
        if c.is_policy:  # scripted policies live in the task pack (covered by the task tree hash)
            out[c.system] = {"kind": "policy"}
    if not commands:
        return out
    from agent_sandbox.systems import BUILTIN_SYSTEMS, load_systems

    if systems_file is None and not set(commands) <= set(BUILTIN_SYSTEMS):
        raise CampaignSpecError(f"systems: {', '.join(commands)} need a systems file (--systems FILE)")
    try:
        defined = load_systems(Path(systems_file)) if systems_file is not None else {}
    except Exception as exc:
        raise CampaignSpecError(f"systems: {systems_file}: {exc}") from None
    defined.update({k: v for k, v in BUILTIN_SYSTEMS.items() if k in commands})
    dump: dict[str, Any] = {k: v.model_dump(mode="json") for k, v in defined.items()}
    models: dict[str, str] = {}  # the model each model-calling system runs
    if any(defined[n].calls_model for n in commands if n in defined):
        # The upstream, models and budget are part of what a model-calling system is (never the key).
        from orchestrator.model_access import ModelAccessError, load_model_access

        if model_access is None:
            raise CampaignSpecError("systems: a system that calls a model needs --model-access FILE")
        try:
            loaded = load_model_access(Path(model_access))
            for provider in loaded.providers.values():
                provider.read_key()  # a key source that gives nothing is refused now, not per attempt
            access = loaded.identity()
            models = {n: loaded.model_for(s.model.provider, s.model.model) for n, s in defined.items()
                      if n in commands and s.model is not None}
        except ModelAccessError as exc:
            raise CampaignSpecError(f"model_access: {exc}") from None
        dump = {k: dict(v, model_access=access) if defined[k].calls_model else v for k, v in dump.items()}
    for name in commands:
        if name not in dump:
            known = ", ".join(sorted(dump)) or "none"
            raise CampaignSpecError(f"systems: {name!r} is not defined in {systems_file} (defined: {known})")
        out[name] = {"kind": "command", "sha256": hashlib.sha256(canonical_json(dump[name]).encode()).hexdigest()}
        tools = (dump[name].get("model_access") or {}).get("provider_tools")
        if tools:  # a provider tool allowed on purpose labels the system's cells (never pooled)
            out[name]["provider_tools"] = list(tools)
        out[name]["adapter"] = declared_adapter(defined[name], models.get(name))
    return out


def declared_adapter(system: Any, model: str | None) -> dict[str, Any]:
    """A command system's harness, its version, model, reasoning effort and limits, as the
    campaign declares them (the summary's and the report's `adapter`; each turn records its own)."""
    from orchestrator.attempt.adapter_record import adapter_settings

    return adapter_settings(system, model, None).model_dump(mode="json", exclude={"notes", "turn_timeout_s"})


def _result_dict(value: Any) -> dict[str, Any]:
    record = getattr(value, "record", None)
    if isinstance(record, dict):
        return record
    if isinstance(value, dict):
        return value
    raise TypeError(f"run_attempt returned {type(value).__name__}, not an AttemptResult")


class FatalCampaignError(RuntimeError):
    """Bad input found by the runtime before an attempt started: stop the campaign, don't retry."""


def limited_backend(name: str, config: Any, limits: EngineLimits) -> Any:
    """The runtime's backend by name (`docker` or `local`), wrapped in the campaign's limits."""
    from orchestrator.backends import make_backend

    return LimitedBackend(make_backend(name, config), limits)


def prepare_backend(backend: Any) -> None:
    """Reap what dead orchestrators left and build missing images, once, before any attempt."""
    backend.ensure_prepared()


class ScenarioCache:
    """Scenarios built once per (task, seed) before attempts use them, one build at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, int | None], Any] = {}

    def put(self, task: str, seed: int | None, scenario: Any) -> None:
        """Use a prepared scenario (seed None: for every seed of the task)."""
        with self._lock:
            self._items[(task, seed)] = scenario

    def get(self, task: str, seed: int) -> Any:
        from orchestrator.scenarios.cache import ensure_scenario

        with self._lock:
            key = (task, seed)
            if key not in self._items and (task, None) in self._items:  # one scenario for every seed
                return self._items[(task, None)]
            if key not in self._items:
                self._items[key] = ensure_scenario(task, seed)
            return self._items[key]


def make_runner(
    *,
    backend: Any,
    runs_root: Path,
    label: str,
    turn_timeout_s: float | None,
    systems_file: str | None,
    config: Any = None,
    model_access: str | None = None,
    scenarios: ScenarioCache | None = None,
    extra: dict[str, Any] | None = None,
) -> AttemptJob:
    """An `AttemptJob` that runs attempts through `orchestrator.attempt.run_attempt`.

    `extra` holds further keyword arguments of `run_attempt` (e.g. `task=` and `grade=` for a
    test scenario that has no task pack).
    """
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.errors import ConfigError, TaskError
    from orchestrator.inputs import load_task_pack
    from orchestrator.scenarios.folder import ScenarioError

    scenarios = scenarios or ScenarioCache()

    def runner(ident: AttemptIdentity, folder: Path, cancel: threading.Event) -> dict[str, Any]:
        spec = AttemptSpec(
            cell=ident.cell,
            seed=ident.seed,
            rep=ident.rep,
            label=label,
            timeout_override_s=turn_timeout_s,
            systems_file=Path(systems_file) if systems_file else None,
            model_access=Path(model_access) if model_access else None,
        )
        kwargs: dict[str, Any] = dict(extra or {})
        kwargs["cancel"] = cancel
        if config is not None:
            kwargs["config"] = config
        try:
            task = kwargs.pop("task", None) or load_task_pack(ident.task)
            # The scenario is built here, outside the attempt: a build failure is the task's bug,
            # recorded as a task_error (never retried), not an infra error of one attempt.
            try:
                scenario = scenarios.get(ident.task, ident.seed)
            except (ScenarioError, TaskError) as exc:
                return write_orchestrator_failure(folder, ident, exc, label=label, outcome="task_error")
            result = run_attempt(spec, backend=backend, root=runs_root, scenario=scenario, task=task, **kwargs)
        except ConfigError as exc:
            raise FatalCampaignError(f"{ident.cell.text}: {exc}") from exc
        # result.json on disk is the record; the returned object is only a fallback
        return read_result(folder) or _result_dict(result)

    return runner
