"""Planning: demand forecasts, MRP runs and their suggestions, and releasing a suggestion into
a purchase order (created and sent) or a planned work order.

MRP nets, item by item in low-level-code order (parents before components, phantoms passed
through), gross requirements (forecasts, open sales-order lines, components of open and
planned work orders) against on-hand and scheduled receipts (open PO lines at their confirmed
or needed date, open work orders at their due date), keeping the item's safety stock. A
shortage first pulls in a later scheduled receipt (an *expedite* suggestion); otherwise it
becomes a planned order sized up to the MOQ and order multiple, released lead-time days
before it is needed. A scheduled receipt never needed in the horizon is a *cancel*
suggestion. Suggestions whose release date falls within `firm_days` are firm.
"""
from __future__ import annotations

from .routes import router
from .schemas import MrpRunIn
from .service import DEFER_DAYS, run_mrp
from .tables import forecasts, mrp_suggestions

__all__ = ["router", "DEFER_DAYS", "MrpRunIn", "forecasts", "mrp_suggestions", "run_mrp"]
