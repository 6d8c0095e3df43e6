"""`plan_feasible`: a plan read back from the final database, checked against its constraints and
compared with the reference plan's objective.

The plan and its constraints are projections (named SQL in the pack's projections.sql), so the
check does not depend on which ERP tables hold a plan. Columns each projection must return:

Constraints are read from the reference's database (the oracle's, where master data is as the
scenario set it) unless named in `agent_constraints`; the plan (operations, and the jobs'
presence, `start` and `finish`) from the agent's.

- `jobs`: `job`, and any of `release` (earliest day work may start), `due`, `deadline` (a hard
  latest finish: a contract's last acceptable day), `penalty_per_day` (cost of each calendar day
  finished after `due`), `start` and `finish` (the plan's days, for a plan without operations);
- `operations`: `job`, `step`, `resource`, `day`, `hours` (one row per job, step and day worked);
- `routing`: `job`, `step`, `resource`, `hours` (the work each job needs, step by step);
- `capacity`: `resource`, `hours`, optionally `day` (a row with a day overrides the daily hours);
- `closed_days`: `day` (plant calendar: non-working days; weekends too when `weekends_closed`);
- `precedence`: `before`, `after` (job `after` may start only once job `before` has finished);
- `demands`: `job`, `item`, `qty` (material the job draws on its start day);
- `supplies`: `item`, `day`, `qty` (on hand, dated the plan's first day, and receipts).
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tasks.checks.base import CheckBase

PLAN_PROJECTIONS = ("jobs", "operations", "routing", "capacity", "closed_days", "precedence", "demands", "supplies")


class PlanFeasibleCheck(CheckBase):
    """The plan breaks no constraint and its objective is within `max_gap` of the reference's."""

    type: Literal["plan_feasible"]
    jobs: str
    operations: str | None = None
    routing: str | None = None
    capacity: str | None = None
    closed_days: str | None = None
    precedence: str | None = None
    demands: str | None = None
    supplies: str | None = None
    # Constraint projections read from the agent's database instead of the reference's: only those
    # the task lets the agent change (a pack where expediting a receipt is part of the work names
    # `supplies`). Everything else is read from the reference, so an agent cannot move its own bar.
    agent_constraints: list[str] = Field(default_factory=list)
    weekends_closed: bool = True
    # Days between a step's last day and the next step's first day (0: the same day may hold both).
    step_lag_days: int = Field(default=0, ge=0)
    # Days between a job's finish and the start of a job that must follow it.
    job_lag_days: int = Field(default=0, ge=0)
    objective: Literal["makespan", "penalty_cost"]
    # The day makespan is counted from (default: the earliest release, else the earliest planned day).
    start: str | None = None
    # How much worse than the reference objective still passes: relatively (0.1: up to 10% worse)
    # or absolutely (in the objective's unit: 1 = one working day of makespan, or $1 of penalty);
    # either suffices.
    max_gap: float = Field(default=0.0, ge=0)
    max_excess: float = Field(default=0.0, ge=0)

    @property
    def projections(self) -> list[str]:
        """Every projection the plan and its constraints are read from."""
        return [p for p in (getattr(self, f) for f in PLAN_PROJECTIONS) if isinstance(p, str)]

    @model_validator(mode="after")
    def _needs(self) -> PlanFeasibleCheck:
        if self.operations is not None and self.capacity is None:
            raise ValueError("operations without capacity: give the capacity projection")
        if self.routing is not None and self.operations is None:
            raise ValueError("routing without operations: give the operations projection")
        if (self.demands is None) != (self.supplies is None):
            raise ValueError("give both demands and supplies, or neither")
        allowed = {getattr(self, f) for f in PLAN_PROJECTIONS if f not in ("jobs", "operations")} - {None}
        wrong = sorted(set(self.agent_constraints) - allowed)
        if wrong:
            raise ValueError(f"agent_constraints names {wrong}, not constraint projections of this check")
        return self
