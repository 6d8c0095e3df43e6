"""Receivables' tables: customer invoices and lines, cash receipts and their applications."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

ar_invoices = Table(
    "ar_invoices", metadata,
    *doc_columns(),                                       # open | partially_paid | paid
    Column("customer_id", String, nullable=False, index=True),
    Column("shipment_id", String, index=True),
    Column("so_id", String),
    Column("customer_po", String),
    Column("invoice_date", String, nullable=False),
    Column("due_date", String, nullable=False),
    Column("terms", String, nullable=False),
    Column("subtotal_cents", Integer, nullable=False),
    Column("tax_cents", Integer, nullable=False),
    Column("total_cents", Integer, nullable=False),
    Column("applied_cents", Integer, nullable=False, default=0),
    Column("je_id", String),
)


ar_invoice_lines = Table(
    "ar_invoice_lines", metadata,
    Column("invoice_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("so_line", Integer),
    Column("item_id", String),
    Column("description", Text),
    Column("qty", Float, nullable=False),
    Column("unit_price", Float, nullable=False),
    Column("amount_cents", Integer, nullable=False),
    Column("cost_cents", Integer, nullable=False, default=0),
)


cash_receipts = Table(
    "cash_receipts", metadata,
    *doc_columns(),                                       # unapplied | partially_applied | applied
    Column("customer_id", String, nullable=False, index=True),
    Column("receipt_date", String, nullable=False),
    Column("amount_cents", Integer, nullable=False),
    Column("applied_cents", Integer, nullable=False, default=0),
    Column("reference", String),
    Column("method", String, nullable=False),            # check | ach | wire
    Column("note", Text),
    Column("je_id", String),
)


cash_applications = Table(
    "cash_applications", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("receipt_id", String, nullable=False, index=True),
    Column("invoice_id", String, nullable=False, index=True),
    Column("amount_cents", Integer, nullable=False),
    Column("on_date", String, nullable=False),
    Column("by_user", String, nullable=False),
    Column("je_id", String),
)


register_object("ar_invoice", ar_invoices, [(ar_invoice_lines, "invoice_id")])


register_object("cash_receipt", cash_receipts, [(cash_applications, "receipt_id")])
