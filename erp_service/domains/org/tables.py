"""Organisation tables: departments, approval limits, delegations, leave, the company calendar and
the company's settings."""
from __future__ import annotations

from sqlalchemy import Column, Integer, String, Table, Text

from ...kernel.schema import metadata

departments = Table(
    "departments", metadata,
    Column("id", String, primary_key=True),
    Column("name", String, nullable=False),
    Column("head_user_id", String),
    Column("cost_center", String),
)

#: Per user and document type: the highest amount the user may approve.
approval_limits = Table(
    "approval_limits", metadata,
    Column("user_id", String, primary_key=True),
    Column("doc_type", String, primary_key=True),   # requisition, purchase_order, payment_run, journal_entry, ap_invoice
    Column("limit_cents", Integer, nullable=False),
)

delegations = Table(
    "delegations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("from_user", String, nullable=False),
    Column("to_user", String, nullable=False),
    Column("doc_type", String),                      # null = all document types
    Column("start_date", String, nullable=False),
    Column("end_date", String, nullable=False),
)

leave = Table(
    "leave", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", String, nullable=False),
    Column("start_date", String, nullable=False),
    Column("end_date", String, nullable=False),
    Column("note", Text),
)

#: Non-working days of the company calendar (weekends are implicit).
calendar = Table(
    "calendar", metadata,
    Column("day", String, primary_key=True),
    Column("kind", String, nullable=False),          # holiday | plant_shutdown
    Column("note", Text),
)

company = Table(
    "company", metadata,
    Column("key", String, primary_key=True),
    Column("value", Text, nullable=False),
)
