"""What an attempt needs loaded before it runs: the task pack and the scenario of (cell, seed).

`run_attempt` takes both ready-made; the commands that start attempts from a cell load them
here. A task the registry does not know is the user's input (`ConfigError`); a scenario that
cannot be built is the task's bug (`TaskError`).
"""
from __future__ import annotations

from dataclasses import dataclass

from orchestrator.cells import Cell
from orchestrator.errors import ConfigError, TaskError
from orchestrator.scenarios.cache import ensure_scenario
from orchestrator.scenarios.folder import Scenario, ScenarioError
from tasks.packs import TaskPack
from tasks.registry import load_task


@dataclass(frozen=True)
class AttemptInputs:
    """The loaded task pack and scenario of one (cell, seed)."""

    task: TaskPack
    scenario: Scenario


def load_task_pack(slug: str) -> TaskPack:
    """The task pack `slug`; `ConfigError` naming the task when it cannot be loaded."""
    try:
        return load_task(slug)
    except Exception as exc:  # noqa: BLE001 — PackError and friends: the user named it
        raise ConfigError(f"task {slug!r}: {exc}") from exc


def load_inputs(cell: Cell, seed: int) -> AttemptInputs:
    """Task pack and (cached, built if missing) scenario of `cell` at `seed`."""
    task = load_task_pack(cell.task)
    try:
        scenario = ensure_scenario(cell.task, seed)
    except ScenarioError as exc:
        raise TaskError(f"scenario of {cell.task!r} seed {seed}: {exc}") from exc
    return AttemptInputs(task, scenario)
