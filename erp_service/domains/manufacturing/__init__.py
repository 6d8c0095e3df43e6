"""Manufacturing: work orders planned → released → in_progress → completed → closed (or
cancelled), component issues (and their reversal), completions, and the WIP subledger.

Values are at standard cost: an issue moves component value from inventory to WIP, a
completion moves the finished item's standard value from WIP to inventory, and closing posts
what is left in the order's WIP to manufacturing variance. `wip_txns` holds every WIP value
movement, so the `wip` subledger is their sum.
"""
from __future__ import annotations

from . import ledger  # noqa: F401  (the WIP subledger)
from .routes import router
from .schemas import WorkOrderIn
from .service import create_work_order, requirements
from .tables import work_orders

__all__ = ["router", "WorkOrderIn", "create_work_order", "requirements", "work_orders"]
