"""Purchasing: requisitions with approval routing, purchase orders, acknowledgements, vendor
requests, and the vendor and approver counterparties that act on them."""
from __future__ import annotations

# actors registers the vendor and approver counterparties; world declares the sections they read.
from . import actors, budgets, world  # noqa: F401  (budgets registers its report)
from .routes import router
from .service import register_vendor_request_hook
from .tables import (
                     approval_requests,
                     po_acknowledgements,
                     po_lines,
                     purchase_orders,
                     requisition_lines,
                     requisitions,
                     vendor_requests,
)

__all__ = ["router", "register_vendor_request_hook", "approval_requests", "po_acknowledgements", "po_lines",
           "purchase_orders", "requisition_lines", "requisitions", "vendor_requests"]
