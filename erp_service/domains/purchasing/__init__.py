"""Purchasing: requisitions with approval routing, purchase orders, acknowledgements, vendor
requests, and the vendor and approver counterparties that act on them."""
from __future__ import annotations

from . import actors  # noqa: F401  (registers the vendor and approver counterparties)
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
