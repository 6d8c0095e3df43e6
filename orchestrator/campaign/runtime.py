"""The campaign's bridge to the attempt runtime (imported lazily): backends, scenarios, the door.

The runtime (`orchestrator.attempt`, `orchestrator.backends`, `orchestrator.scenarios`) belongs to
other parts; this module is where the campaign starts them: the engine wrapped in the campaign's
limits, the scenarios built once per (task, seed), and the `AttemptJob` that runs one attempt
through `orchestrator.attempt.run_cell`. The input checks are the attempt's
(`orchestrator/attempt/inputs.py`).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from orchestrator.campaign.declaration import read_result
from orchestrator.campaign.limits import EngineLimits, LimitedBackend
from orchestrator.campaign.scheduler import AttemptJob, write_orchestrator_failure
from orchestrator.identity import AttemptIdentity


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


def make_job(
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
    """An `AttemptJob` that runs attempts through the attempt's door (`orchestrator.attempt.run_cell`).

    `extra` holds further keyword arguments of `run_cell` (e.g. `task=` and `grade=` for a test
    scenario that has no task pack).
    """
    from orchestrator.attempt import AttemptSpec, run_cell
    from orchestrator.errors import ConfigError, TaskError

    scenarios = scenarios or ScenarioCache()

    def job(ident: AttemptIdentity, folder: Path, cancel: threading.Event) -> dict[str, Any]:
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
        if config is not None:
            kwargs["config"] = config
        try:
            result = run_cell(spec, backend=backend, root=runs_root, scenario_for=scenarios.get, cancel=cancel, **kwargs)
        except TaskError as exc:
            # The scenario could not be built (before the attempt): the task's bug, recorded as a
            # task_error (never retried), not an infra error of one attempt.
            return write_orchestrator_failure(folder, ident, exc, label=label, outcome="task_error")
        except ConfigError as exc:
            raise FatalCampaignError(f"{ident.cell.text}: {exc}") from exc
        # result.json on disk is the record; the returned object is only a fallback
        return read_result(folder) or _result_dict(result)

    return job
