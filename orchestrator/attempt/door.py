"""The one door into an attempt: `run_cell`, used by every caller that runs one.

    result = run_cell(AttemptSpec(cell, seed, rep=1, label="dev"), backend=backend,
                      scenario_for=ensure_scenario)

`orchestrate attempt` and `orchestrate human`, the campaign's attempt job, `validate` and the
scenario cache's reference run all come through here: the task pack is loaded (unless given),
the scenario is obtained (given, or from `scenario_for(task, seed)`: the caller's cache) and
`run_attempt` runs the lifecycle. The scenario source is a parameter because the scenario cache
itself runs the oracle through this door to build a reference (scenarios/cache.py imports this
package; this package never imports the cache).

Raises before anything starts: `ConfigError` (a task the registry does not know: bad input) and
`TaskError` (the scenario could not be built: the task's bug). Everything after is recorded in
the attempt's folder as its outcome.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.attempt.inputs import load_task_pack
from orchestrator.attempt.records import AttemptSpec, ScenarioInput, TaskInput
from orchestrator.attempt.runner import AttemptResult, run_attempt
from orchestrator.errors import TaskError
from orchestrator.scenarios.folder import ScenarioError

ScenarioSource = Callable[[str, int], ScenarioInput]


def run_cell(
    spec: AttemptSpec,
    *,
    backend: Any,
    scenario_for: ScenarioSource | None = None,
    task: TaskInput | None = None,
    scenario: ScenarioInput | None = None,
    config: Any = None,
    root: Path | None = None,
    cancel: threading.Event | None = None,
    grade: bool = True,
) -> AttemptResult:
    """Run one attempt of `spec` on `backend` and return its result (result.json is written).

    `task` defaults to the registry's pack of the cell; `scenario` to `scenario_for(task, seed)`.
    """
    task = task if task is not None else load_task_pack(spec.cell.task)
    if scenario is None:
        if scenario_for is None:
            raise TypeError("run_cell needs a scenario or a scenario_for source")
        try:
            scenario = scenario_for(spec.cell.task, spec.seed)
        except ScenarioError as exc:
            raise TaskError(f"scenario of {spec.cell.task!r} seed {spec.seed}: {exc}") from exc
    return run_attempt(spec, backend=backend, task=task, scenario=scenario, root=root, config=config,
                       cancel=cancel, grade=grade)
