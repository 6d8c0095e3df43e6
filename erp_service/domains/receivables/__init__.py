"""Receivables: customer invoices from shipments, cash receipts (unapplied cash until applied),
applications, the customer actor that pays by profile, the AR and unapplied-cash subledgers, the
ar-aging and sales-margin reports.

Postings: invoice Dr AR / Cr revenue, Cr sales tax; receipt Dr cash / Cr unapplied cash;
application Dr unapplied cash / Cr AR. The ``ar`` subledger is the open balance of invoices, the
``unapplied_cash`` subledger the unapplied part of receipts (a credit), so both control
accounts tie after any sequence of accepted requests.

World file (read by the customer actor, never free text the agent wrote)::

    "customer_default": {...profile...},          # optional: for customers without a profile
    "customers": {"C-0101": {"pays": "on_time" | "late" | "short" | "never",
                             "days_late": 15, "short_pct": 5.0, "short_reason": "damaged case",
                             "reference": "invoice" | "po" | "wrong" | "<literal text>",
                             "payer": "C-0100",     # a parent paying for this subsidiary
                             "orders": [{"on": "2026-10-12", "customer_po": "PO-77",
                                         "lines": [{"item_id": "FV-100", "qty": 20}]}]}}

Each invoice is paid once, on its due date (plus ``days_late``): the bank records an unapplied
receipt (user sys-bank, action ``ar.remit``) and a remittance advice lands in the ``ar`` box.
Scheduled orders arrive as emails with a PDF purchase order in the ``sales`` box.

Modules: `tables`, `ledger` (subledgers, open AR for sales' credit check, ar-aging), `margin`
(sales-margin), `service`, `world`, `actors` (the customer), `routes`.
"""
from __future__ import annotations

from . import actors, margin  # noqa: F401  (the customer actor; the sales-margin report)
from .ledger import BUCKETS, ArAgingParams, ar_aging, ar_subledger, customer_open_ar_cents, unapplied_cash_subledger
from .margin import SalesMarginParams, sales_margin
from .routes import ArInvoiceOut, ArLineOut, CashReceiptOut, router
from .service import (
    ApplicationIn,
    ApplyIn,
    CashReceiptIn,
    apply_receipt,
    invoice_shipment,
    invoice_view,
    receipt_view,
    record_receipt,
)
from .tables import ar_invoice_lines, ar_invoices, cash_applications, cash_receipts
from .world import CustomerOrder, CustomerProfile, OrderLine

__all__ = ["ar_invoices", "ar_invoice_lines", "cash_receipts", "cash_applications", "ar_subledger", "unapplied_cash_subledger",
           "customer_open_ar_cents", "BUCKETS", "ar_aging", "ArAgingParams", "sales_margin", "SalesMarginParams",
           "CashReceiptIn", "ApplicationIn", "ApplyIn", "invoice_shipment", "invoice_view", "record_receipt",
           "apply_receipt", "receipt_view", "OrderLine", "CustomerOrder", "CustomerProfile", "ArLineOut",
           "ArInvoiceOut", "CashReceiptOut", "router"]
