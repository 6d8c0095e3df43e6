"""One validation of every input of `attempt` and `campaign`, before anything is prepared or written.

Order matters only for the message a user sees first; all of it runs before the engine is
touched, a scenario is built or a folder is created:

    label → turn budget → task packs (load, then the handbook lint gate) → conditions (fault specs
    against the task's profiles) → negative controls → systems (file, definitions, mount sources)

Every refusal is a `CampaignSpecError` (exit 2, bad_input) whose message names the input.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.campaign.spec import CampaignSpecError, check_label, check_turn_budget
from orchestrator.cells import CLEAN, Cell


@dataclass(frozen=True)
class CheckedInputs:
    """What the checks found out on the way (both commands need it next)."""

    cells: list[Cell]
    tasks: dict[str, dict[str, Any]]  # campaign.runtime.task_info
    systems: dict[str, Any]  # campaign.runtime.systems_identity


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
            raise CampaignSpecError(f"task {slug!r}: {exc}") from None
        if report.errors:
            shown = "; ".join(report.errors[:5]) + (f"; and {len(report.errors) - 5} more" if len(report.errors) > 5 else "")
            raise CampaignSpecError(
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
            raise CampaignSpecError(
                f"cells: {cell.text}: condition {cell.condition!r} is not a fault spec or a fault profile of "
                f"task {cell.task!r} (its profiles: {known}): {exc}"
            ) from None


def check_mount_sources(cells: list[Cell], systems_file: str | None) -> None:
    """The host paths a command system mounts exist (the runtime would refuse them later)."""
    if systems_file is None:
        return
    from agent_sandbox.systems import load_systems

    defined = load_systems(Path(systems_file))
    for name in sorted({c.system for c in cells if not c.is_policy and c.system in defined}):
        for mount in getattr(defined[name], "mounts", ()) or ():
            if not Path(mount.source).exists():
                raise CampaignSpecError(f"systems: {name!r}: mount source {mount.source} does not exist")


def check_inputs(
    cells: list[Cell], *, systems_file: str | None, label: str, turn_timeout_s: float | None,
    model_access: str | None = None,
) -> CheckedInputs:
    """Run every input check; raise `CampaignSpecError` naming the first bad input."""
    from orchestrator.campaign import runtime

    check_label(label)
    check_turn_budget(turn_timeout_s)
    tasks = runtime.task_info([c.task for c in cells])
    lint_gate(sorted(tasks))
    check_conditions(cells)
    runtime.check_policies(cells)
    systems = runtime.systems_identity(cells, systems_file, model_access)
    check_mount_sources(cells, systems_file)
    return CheckedInputs(cells, tasks, systems)
