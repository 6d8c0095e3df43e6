"""Payments' tables: payment runs, payments (one per vendor per run) and their allocations
to invoices."""
from __future__ import annotations

from sqlalchemy import Column, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

payment_runs = Table(
    "payment_runs", metadata,
    *doc_columns(),                                   # draft|submitted|approved|released|cancelled
    Column("pay_date", String, nullable=False),
    Column("bank_account_id", String, nullable=False),   # company bank account (bank_accounts.id)
    Column("memo", Text),
    Column("submitted_by", String),
    Column("submitted_on", String),
    Column("approved_by", String),
    Column("approved_on", String),
    Column("released_by", String),
    Column("released_on", String),
)


payments = Table(
    "payments", metadata,
    *doc_columns(),                                   # proposed|released|cleared|voided
    Column("run_id", String, nullable=False, index=True),
    Column("vendor_id", String, nullable=False, index=True),
    Column("vendor_account_id", String, nullable=False),  # the verified remit account at proposal
    Column("bank_account_id", String, nullable=False),
    Column("pay_date", String, nullable=False),
    Column("amount_cents", Integer, nullable=False, default=0),   # cash
    Column("discount_cents", Integer, nullable=False, default=0),
    Column("released_on", String),
    Column("cleared_on", String),
    Column("journal_entry", String),
)


payment_allocations = Table(
    "payment_allocations", metadata,
    Column("payment_id", String, primary_key=True),
    Column("invoice_id", String, primary_key=True, index=True),
    Column("run_id", String, nullable=False, index=True),
    Column("amount_cents", Integer, nullable=False),      # cash applied
    Column("discount_cents", Integer, nullable=False, default=0),
)


register_object("payment_run", payment_runs, [(payments, "run_id"), (payment_allocations, "run_id")])


register_object("payment", payments, [(payment_allocations, "payment_id")])


LIVE_RUN = ("draft", "submitted", "approved")
