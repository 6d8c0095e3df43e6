"""Receiving: receipts against sent purchase orders (lots and expiry for lot-controlled items,
refusals with reasons, substitutions, locations), their reversal, and the GRNI subledger.

Posting a receipt puts the received stock into inventory at standard cost and owes the vendor
the PO price in GRNI (goods received, not invoiced); the difference is purchase price
variance. The payables domain relieves GRNI when it validates an invoice against a PO line
(`payables.grni_cleared_cents`), so the GRNI subledger is: value received − value reversed −
value cleared by invoices.
"""
from __future__ import annotations

from . import actors, reports, world  # noqa: F401  (the scheduled receipts, the GRNI report and the sections they read)
from .ledger import register_invoice_facts
from .routes import router
from .tables import receipt_lines, receipts

__all__ = ["router", "receipt_lines", "receipts", "register_invoice_facts"]
