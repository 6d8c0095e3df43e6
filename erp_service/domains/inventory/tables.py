"""Inventory tables: stock transactions, transfers, adjustments."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

# The domains below inventory, imported before its tables as the flat module was: tables register on
# the shared MetaData in import order, and the scenario database's bytes follow that order.
from .. import ledger, masterdata  # noqa: F401

inventory_txns = Table(
    "inventory_txns", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("on_date", String, nullable=False),
    Column("item_id", String, nullable=False, index=True),
    Column("warehouse_id", String, nullable=False),
    Column("location_id", String),
    Column("lot_no", String),
    Column("qty", Float, nullable=False),                 # signed
    Column("value_cents", Integer, nullable=False),       # signed, at standard cost
    Column("kind", String, nullable=False),               # receipt, receipt_reversal, transfer_out, ...
    Column("doc_type", String),
    Column("doc_id", String, index=True),
    Column("doc_line", Integer),
    Column("by_user", String),
)

transfers = Table(
    "transfers", metadata,
    *doc_columns(),                                        # status: posted
    Column("item_id", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("lot_no", String),
    Column("from_warehouse", String, nullable=False),
    Column("from_location", String),
    Column("to_warehouse", String, nullable=False),
    Column("to_location", String),
    Column("note", Text),
)

adjustments = Table(
    "adjustments", metadata,
    *doc_columns(),                                        # status: posted
    Column("item_id", String, nullable=False),
    Column("warehouse_id", String, nullable=False),
    Column("location_id", String),
    Column("lot_no", String),
    Column("qty", Float, nullable=False),                  # signed change
    Column("value_cents", Integer, nullable=False),
    Column("reason", String, nullable=False),
    Column("note", Text),
    Column("je_id", String),
)

register_object("transfer", transfers)
register_object("adjustment", adjustments)

ADJUST_REASONS = ("count", "damage", "expired", "found", "scrap", "quality", "other")
