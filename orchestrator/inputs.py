"""The task pack and the scenario of (cell, seed), loaded for what reads them outside an attempt
(re-grading a published attempt, tests). An attempt gets them through its door
(`orchestrator.attempt.run_cell`). A task the registry does not know is the user's input
(`ConfigError`); a scenario that cannot be built is the task's bug (`TaskError`).
"""
from __future__ import annotations

from dataclasses import dataclass

from orchestrator.attempt.inputs import load_task_pack
from orchestrator.cells import Cell
from orchestrator.errors import TaskError
from orchestrator.scenarios.cache import ensure_scenario
from orchestrator.scenarios.folder import Scenario, ScenarioError
from tasks.packs import TaskPack


@dataclass(frozen=True)
class AttemptInputs:
    """The loaded task pack and scenario of one (cell, seed)."""

    task: TaskPack
    scenario: Scenario


def load_inputs(cell: Cell, seed: int) -> AttemptInputs:
    """Task pack and (cached, built if missing) scenario of `cell` at `seed`."""
    task = load_task_pack(cell.task)
    try:
        scenario = ensure_scenario(cell.task, seed)
    except ScenarioError as exc:
        raise TaskError(f"scenario of {cell.task!r} seed {seed}: {exc}") from exc
    return AttemptInputs(task, scenario)
