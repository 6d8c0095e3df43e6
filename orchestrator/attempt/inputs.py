"""What an attempt needs before it runs: every input checked, and the task pack loaded.

One validation of every input of `attempt`, `human` and `campaign`, before anything is prepared
or written. Order matters only for the message a user sees first; all of it runs before the
engine is touched, a scenario is built or a folder is created:

    label → turn budget → task packs (load, then the handbook lint gate) → conditions (fault specs
    against the task's profiles) → negative controls → systems (file, definitions, mount sources)

Every refusal is a `ConfigError` (exit 2, bad_input) whose message names the input. The
campaign records what the checks found (`CheckedInputs`: each task's version and tree hash, each
system's definition hash) in its declaration; a single attempt never imports `campaign/`.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.cells import CLEAN, Cell
from orchestrator.errors import ConfigError
from orchestrator.hashing import canonical_json, tree_sha256
from tasks.packs import TaskPack

# A turn budget above a day is a typo (or `inf`); timers and deadlines overflow long before.
MAX_TURN_BUDGET_S = 86_400.0
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class CheckedInputs:
    """What the checks found out on the way (the campaign's declaration records it)."""

    cells: list[Cell]
    tasks: dict[str, dict[str, Any]]  # task_info
    systems: dict[str, Any]  # systems_identity


def check_label(label: str, flag: str = "--label") -> str:
    """A label is one folder name under the runs root: never a path, never hidden."""
    if not LABEL_RE.match(label or ""):
        raise ConfigError(
            f"{flag}: {label!r}: use letters, digits, '.', '_' and '-' only, starting with a letter or digit"
        )
    return label


def check_turn_budget(value: float | None, flag: str = "--timeout") -> float | None:
    """A per-turn budget: a finite number of seconds in (0, MAX_TURN_BUDGET_S]."""
    if value is None:
        return None
    if not math.isfinite(value) or not 0 < value <= MAX_TURN_BUDGET_S:
        raise ConfigError(
            f"{flag}: {value!r} seconds: must be a finite number above 0 and at most {MAX_TURN_BUDGET_S:g}"
        )
    return float(value)


def load_task_pack(slug: str) -> TaskPack:
    """The task pack `slug`; `ConfigError` naming the task when it cannot be loaded."""
    from tasks.registry import load_task

    try:
        return load_task(slug)
    except Exception as exc:  # noqa: BLE001 — PackError and friends: the user named it
        raise ConfigError(f"task {slug!r}: {exc}") from exc


def task_info(slugs: list[str]) -> dict[str, dict[str, Any]]:
    """`{slug: {"version", "tree_sha256", "variant_of"}}` for each task; errors name the task."""
    from tasks.registry import load_task

    out: dict[str, dict[str, Any]] = {}
    for slug in sorted(set(slugs)):
        try:
            pack = load_task(slug)
        except Exception as exc:
            raise ConfigError(f"cells: task {slug!r}: {exc}") from None
        h = hashlib.sha256()
        chain = [pack]
        while chain[-1].variant_of:  # a variant runs its parent's generator: both trees matter
            chain.append(load_task(chain[-1].variant_of))
        for p in chain:
            h.update(p.slug.encode() + b"\0" + tree_sha256(Path(p.dir)).encode())
        out[slug] = {"version": str(pack.version), "tree_sha256": h.hexdigest(), "variant_of": pack.variant_of}
    return out


def lint_gate(slugs: list[str]) -> None:
    """Refuse a task pack whose handbook lint finds errors (a check citing a missing clause, ...).

    The same lint as `orchestrate handbook lint`; packs without a clauses.yaml (and so without
    a handbook registry) have nothing to lint.
    """
    from orchestrator.grading.rules import known_rules
    from tasks import handbook
    from tasks.packs import PackError
    from tasks.registry import load_task

    rules = known_rules()
    for slug in sorted(set(slugs)):
        pack = load_task(slug)
        dirs = [Path(pack.dir)]
        while pack.variant_of:  # a variant inherits its parent's registry and checks
            pack = load_task(pack.variant_of)
            dirs.append(Path(pack.dir))
        if not any((d / "clauses.yaml").exists() for d in dirs):
            continue
        try:
            report = handbook.lint(slug, rules)
        except PackError as exc:
            raise ConfigError(f"task {slug!r}: {exc}") from None
        if report.errors:
            shown = "; ".join(report.errors[:5]) + (f"; and {len(report.errors) - 5} more" if len(report.errors) > 5 else "")
            raise ConfigError(
                f"task {slug!r} fails the handbook lint ({len(report.errors)} error(s)): {shown} "
                f"(see `orchestrate handbook lint {slug}`)"
            )


def check_conditions(cells: list[Cell]) -> None:
    """Each condition parses as a fault spec whose names are the task's fault profiles."""
    from erp_service.faults import parse_fault_spec
    from tasks.registry import load_task

    for cell in cells:
        if cell.condition == CLEAN:
            continue
        task = load_task(cell.task)
        profiles = {name: prof.faults for name, prof in task.fault_profiles.items()}
        try:
            parse_fault_spec(cell.condition, profiles)
        except Exception as exc:  # noqa: BLE001 — FaultSpecError and its kin: the user's input
            known = ", ".join(sorted(profiles)) or "none"
            raise ConfigError(
                f"cells: {cell.text}: condition {cell.condition!r} is not a fault spec or a fault profile of "
                f"task {cell.task!r} (its profiles: {known}): {exc}"
            ) from None


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
            raise ConfigError(
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
        raise ConfigError(f"systems: {', '.join(commands)} need a systems file (--systems FILE)")
    try:
        defined = load_systems(Path(systems_file)) if systems_file is not None else {}
    except Exception as exc:
        raise ConfigError(f"systems: {systems_file}: {exc}") from None
    defined.update({k: v for k, v in BUILTIN_SYSTEMS.items() if k in commands})
    dump: dict[str, Any] = {k: v.model_dump(mode="json") for k, v in defined.items()}
    models: dict[str, str] = {}  # the model each model-calling system runs
    if any(defined[n].calls_model for n in commands if n in defined):
        # The upstream, models and budget are part of what a model-calling system is (never the key).
        from orchestrator.model_access import ModelAccessError, load_model_access

        if model_access is None:
            raise ConfigError("systems: a system that calls a model needs --model-access FILE")
        try:
            loaded = load_model_access(Path(model_access))
            for provider in loaded.providers.values():
                provider.read_key()  # a key source that gives nothing is refused now, not per attempt
            access = loaded.identity()
            models = {n: loaded.model_for(s.model.provider, s.model.model) for n, s in defined.items()
                      if n in commands and s.model is not None}
        except ModelAccessError as exc:
            raise ConfigError(f"model_access: {exc}") from None
        dump = {k: dict(v, model_access=access) if defined[k].calls_model else v for k, v in dump.items()}
    for name in commands:
        if name not in dump:
            known = ", ".join(sorted(dump)) or "none"
            raise ConfigError(f"systems: {name!r} is not defined in {systems_file} (defined: {known})")
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


def check_mount_sources(cells: list[Cell], systems_file: str | None) -> None:
    """The host paths a command system mounts exist (the runtime would refuse them later)."""
    if systems_file is None:
        return
    from agent_sandbox.systems import load_systems

    defined = load_systems(Path(systems_file))
    for name in sorted({c.system for c in cells if not c.is_policy and c.system in defined}):
        for mount in getattr(defined[name], "mounts", ()) or ():
            if not Path(mount.source).exists():
                raise ConfigError(f"systems: {name!r}: mount source {mount.source} does not exist")


def check_inputs(
    cells: list[Cell], *, systems_file: str | None, label: str, turn_timeout_s: float | None,
    model_access: str | None = None,
) -> CheckedInputs:
    """Run every input check; raise `ConfigError` naming the first bad input."""
    check_label(label)
    check_turn_budget(turn_timeout_s)
    tasks = task_info([c.task for c in cells])
    lint_gate(sorted(tasks))
    check_conditions(cells)
    check_policies(cells)
    systems = systems_identity(cells, systems_file, model_access)
    check_mount_sources(cells, systems_file)
    return CheckedInputs(cells, tasks, systems)
