"""One attempt: phases over typed records (runner.py, phases.py, records.py, resolve.py).

    from orchestrator.attempt import AttemptSpec, run_attempt, sigterm_as_interrupt
"""
from __future__ import annotations

from orchestrator.attempt.phases import sigterm_as_interrupt
from orchestrator.attempt.records import AttemptRecord, AttemptSpec, ErrorRecord, ResultRecord, TurnRecord, new_attempt_id
from orchestrator.attempt.runner import AttemptResult, Cancelled, run_attempt

__all__ = [
    "AttemptRecord",
    "AttemptResult",
    "AttemptSpec",
    "Cancelled",
    "ErrorRecord",
    "ResultRecord",
    "TurnRecord",
    "new_attempt_id",
    "run_attempt",
    "sigterm_as_interrupt",
]
