"""Payables' tables: vendor invoices as billed, their lines, and holds."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

ap_invoices = Table(
    "ap_invoices", metadata,
    *doc_columns(),                   # entered|matched|on_hold|approved|paid|rejected|voided
    Column("vendor_id", String, nullable=False, index=True),
    Column("invoice_no", String, nullable=False),        # as billed
    Column("invoice_date", String, nullable=False),
    Column("terms", String, nullable=False),
    Column("due_date", String, nullable=False),
    Column("discount_date", String),
    Column("discount_cents", Integer, nullable=False, default=0),
    Column("total_cents", Integer, nullable=False, default=0),
    Column("po_id", String),
    Column("source_ref", String),                        # e.g. the inbox message it came from
    Column("memo", Text),
    Column("prior_status", String),                      # status to return to when the last hold is released
    Column("validated_by", String),
    Column("validated_on", String),
    Column("approved_by", String),
    Column("approved_on", String),
    Column("voided_on", String),
    Column("journal_entry", String),
)


ap_invoice_lines = Table(
    "ap_invoice_lines", metadata,
    Column("invoice_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("kind", String, nullable=False),              # item | freight | tax | other
    Column("po_line", Integer),                          # line number on the invoice's PO
    Column("item_id", String),
    Column("description", Text),
    Column("qty", Float),
    Column("unit_price", Float),
    Column("amount_cents", Integer, nullable=False),
    Column("account_id", String),
    Column("grni_cents", Integer),                       # set at validation for PO-matched item lines
)


holds = Table(
    "holds", metadata,
    Column("id", String, primary_key=True),              # HOLD-10001
    Column("invoice_id", String, nullable=False, index=True),
    Column("line_no", Integer),
    Column("reason", String, nullable=False),
    Column("note", Text),
    Column("status", String, nullable=False),            # active | released
    Column("placed_by", String),
    Column("placed_on", String, nullable=False),
    Column("released_by", String),
    Column("released_on", String),
    Column("release_note", Text),
)


register_object("ap_invoice", ap_invoices, [(ap_invoice_lines, "invoice_id"), (holds, "invoice_id")])


HOLD_REASONS = ("price", "quantity", "no_receipt", "duplicate_suspect", "vendor", "tax", "freight", "dispute", "other")


LINE_KINDS = ("item", "freight", "tax", "other")


POSTED_STATUSES = ("matched", "approved", "paid")     # plus on_hold with a posted prior status


PRICE_TOLERANCE = 0.005
