"""Payables: vendor invoices as billed, holds, three-way match, validation (posting) and approval.

Lifecycle: entered → matched (validated: posted to the ledger) → approved → paid; entered →
rejected; entered/matched/approved → voided (validated ones are reversed; refused once any
payment exists). Placing a hold moves the invoice to ``on_hold`` and remembers where it was;
releasing its last active hold moves it back. The system never places holds by itself.

Modules: `tables`, `match` (three-way match, quantities billed), `disputes`, `settlement` (how
much is settled: the rule payments registers), `views`, `service` (the lifecycle), `ledger`
(the ``ap`` subledger, GRNI cleared, ap-aging), `routes`, `actors` (escalation actions).
"""
from __future__ import annotations

from . import actors, ledger  # noqa: F401  (escalation actions; subledger, report, receiving's facts)
from .disputes import disputed_invoice_ids, is_disputed
from .ledger import ap_subledger, grni_cleared_cents
from .match import invoiced_qty, po_line_facts, three_way_match
from .routes import HistoryOut, InvoiceDetail, InvoiceOut, router
from .service import (
    HoldIn,
    InvoiceIn,
    InvoiceLineIn,
    LinePatch,
    NoteIn,
    active_holds,
    approve_invoice,
    enter_invoice,
    place_hold,
    reject_invoice,
    release_hold,
    update_line,
    validate_invoice,
    void_invoice,
)
from .settlement import Settlement, open_cents, register_settlement, settlement
from .tables import HOLD_REASONS, ap_invoice_lines, ap_invoices, holds
from .views import invoice_detail, invoice_out, invoice_outs

__all__ = ["disputed_invoice_ids", "is_disputed", "ap_subledger", "grni_cleared_cents", "invoiced_qty",
           "po_line_facts", "three_way_match", "HistoryOut", "InvoiceDetail", "InvoiceOut", "router", "HoldIn",
           "InvoiceIn", "InvoiceLineIn", "LinePatch", "NoteIn", "active_holds", "approve_invoice", "enter_invoice",
           "place_hold", "reject_invoice", "release_hold", "update_line", "validate_invoice", "void_invoice",
           "Settlement", "open_cents", "register_settlement", "settlement", "HOLD_REASONS", "ap_invoice_lines",
           "ap_invoices", "holds", "invoice_detail", "invoice_out", "invoice_outs"]
