"""The world section payments' approver reads."""
from __future__ import annotations

from ...sim import SectionModel, world_section


class PaymentRunApprover(SectionModel):
    """``payment_run_approver``: who approves submitted payment runs, after how many calendar
    days, and whether they release approved runs."""

    user: str | None = None
    approve_after_days: int = 1
    release: bool = True


world_section("payment_run_approver", PaymentRunApprover, owner=__name__,
              doc="who approves and releases submitted payment runs")
