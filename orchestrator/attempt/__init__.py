"""One attempt: its door, phases over typed records, and the helpers only an attempt uses.

    from orchestrator.attempt import AttemptSpec, run_cell, sigterm_as_interrupt

Every caller runs an attempt through `run_cell` (`door`: `orchestrate attempt`/`human`, the
campaign's job, `validate`, the scenario cache's reference run). `inputs` checks every input
before anything starts (label, budget, packs and their lint, conditions, controls, systems) and
loads the task pack: a single attempt never imports `campaign`.
Modules: `runner` (the lifecycle), `phases`, `records`, `resolve` (what a system's turns run),
`human_turns`; `control_client` and `streaming` (the ERP's control API and the audit/fault
streams to the attempt folder), `mounts` (which host paths a systems file may show an agent),
`model_run` and `model_usage` (the model gateway's part in an attempt and its usage figures).
May import: the orchestrator's root modules, `backends`, `services`, `scenarios.folder`,
`grading`, `images`, `tasks`; never `campaign`, `publish`, `report` or the commands.
"""
from __future__ import annotations

from orchestrator.attempt.door import run_cell
from orchestrator.attempt.phases import sigterm_as_interrupt
from orchestrator.attempt.records import AttemptRecord, AttemptSpec, ErrorRecord, ResultRecord, TurnRecord
from orchestrator.attempt.runner import AttemptResult, Cancelled, run_attempt

__all__ = [
    "AttemptRecord",
    "AttemptResult",
    "AttemptSpec",
    "Cancelled",
    "ErrorRecord",
    "ResultRecord",
    "TurnRecord",
    "run_attempt",
    "run_cell",
    "sigterm_as_interrupt",
]
