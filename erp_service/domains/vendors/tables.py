"""Vendor tables: vendors and their bank accounts."""
from __future__ import annotations

from sqlalchemy import Column, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

# The domains below vendors, imported before its tables as the flat module was: tables register on the
# shared MetaData in import order, and the scenario database's bytes follow that order.
from .. import comms, ledger  # noqa: F401

vendors = Table(
    "vendors", metadata,
    Column("id", String, primary_key=True),             # V-0101
    Column("name", String, nullable=False),
    Column("status", String, nullable=False),           # active | inactive
    Column("terms", String, nullable=False),            # terms.id
    Column("tin", String),
    Column("email", String),
    Column("phone", String),                            # the number on file
    Column("address", Text),
    Column("contact", String),
    Column("quality_hold", Integer, nullable=False, default=0),
    Column("remit_account", String),                    # vendor_bank_accounts.id (verified)
    Column("default_account", String),                  # expense account for non-PO lines
    Column("created_on", String),
)

vendor_bank_accounts = Table(
    "vendor_bank_accounts", metadata,
    *doc_columns(),                                     # pending | verified | rejected | retired | withdrawn
    Column("vendor_id", String, nullable=False, index=True),
    Column("bank_name", String, nullable=False),
    Column("account_name", String),
    Column("account_number", String, nullable=False),
    Column("routing_number", String, nullable=False),
    Column("source_ref", String),                       # e.g. the message that asked for the change
    Column("note", Text),
    Column("decided_by", String),
    Column("decided_on", String),
    Column("decision_note", Text),
)

register_object("vendor", vendors)
register_object("vendor_bank_account", vendor_bank_accounts)

VENDOR_STATUSES = ("active", "inactive")
