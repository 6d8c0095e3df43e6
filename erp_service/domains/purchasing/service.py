"""Purchasing service functions: requisitions with delegation-of-authority routing, purchase
orders, acknowledgements and vendor requests. Hard controls raise 409 problems; nothing here
commits (the pipeline owns the transaction).

This module is the service API the routes, the actors and other domains use; the functions
live in `common`, `requisitions`, `orders` and `vendor_requests`.
"""
from __future__ import annotations

from .common import (
           EPS,
           OPEN_PO,
           REQUEST_KINDS,
           line_cents,
           money_view,
           register_vendor_request_hook,
           require_active_vendor,
           vendor_row,
)
from .orders import (
           AckLineIn,
           AcknowledgementIn,
           POLineIn,
           POLinePatch,
           PurchaseOrderIn,
           RequisitionLineRef,
           acknowledge_po,
           add_po_line,
           approve_po,
           cancel_po,
           close_po,
           close_po_line,
           create_po,
           po_view,
           refresh_po_status,
           send_po,
           update_po_line,
)
from .requisitions import (
           DecisionIn,
           ForwardIn,
           NoteIn,
           ReqLineIn,
           RequisitionIn,
           RoutingReason,
           approve_requisition,
           cancel_requisition,
           create_requisition,
           decide_requisition,
           forward_requisition,
           reasoned_note,
           requisition_view,
           submit_requisition,
)
from .vendor_requests import VendorAnswerIn, VendorRequestIn, answer_vendor_request, create_vendor_request, vendor_request_view

__all__ = ["EPS", "OPEN_PO", "REQUEST_KINDS", "register_vendor_request_hook", "line_cents", "vendor_row",
           "require_active_vendor", "money_view", "ReqLineIn", "RequisitionIn", "RoutingReason", "ForwardIn",
           "NoteIn", "DecisionIn", "reasoned_note", "create_requisition", "submit_requisition",
           "approve_requisition", "decide_requisition", "forward_requisition", "cancel_requisition",
           "requisition_view", "RequisitionLineRef", "POLineIn", "PurchaseOrderIn", "POLinePatch", "AckLineIn",
           "AcknowledgementIn", "create_po", "add_po_line", "update_po_line", "approve_po", "send_po", "cancel_po",
           "refresh_po_status", "close_po_line", "close_po", "acknowledge_po", "po_view", "VendorRequestIn",
           "VendorAnswerIn", "create_vendor_request", "answer_vendor_request", "vendor_request_view"]
