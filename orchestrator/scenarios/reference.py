"""The reference run: the oracle through the *local* backend, ungraded, for a scenario's reference.

`orchestrator.scenarios.cache.build_reference` uses `oracle_final_db_local` unless given another
reference run. The scenario cache imports this module (and so the runtime); this module and the runtime
read a scenario through `orchestrator.scenarios.folder` only, so neither imports the cache back.
"""
from __future__ import annotations

from pathlib import Path

from orchestrator.attempt import AttemptSpec, run_cell
from orchestrator.backends import make_backend
from orchestrator.cells import Cell
from orchestrator.config import RuntimeConfig
from orchestrator.scenarios.folder import Scenario, ScenarioError
from tasks.packs import TaskPack


def oracle_final_db_local(task: TaskPack, scenario: Scenario, scratch: Path) -> Path:
    """Run the oracle through the local backend (no grading) and return its final database."""
    config = RuntimeConfig.from_env(runs_root=scratch, campaign="reference")
    backend = make_backend("local", config)
    spec = AttemptSpec(cell=Cell("oracle", task.slug), seed=scenario.seed, rep=1, label="reference")
    result = run_cell(spec, backend=backend, root=scratch, config=config, scenario=scenario, task=task, grade=False)
    final_db = Path(result.paths.final_db)
    if result.outcome != "graded" or not final_db.exists():
        err = result.error or {}
        raise ScenarioError(
            f"{task.slug} seed {scenario.seed}: the oracle's reference run did not finish "
            f"(outcome {result.outcome}: {err.get('message', 'no final database')}); see {result.paths.root}"
        )
    return final_db
