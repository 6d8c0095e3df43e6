"""Receiving tables: receipts and their lines, refusal reasons."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

# The domains below receiving, imported before its tables as the flat module was: tables register
# on the shared MetaData in import order, and the scenario database's bytes follow that order.
from .. import inventory, masterdata, org, purchasing  # noqa: F401

REFUSAL_REASONS = ("damaged", "short_dated", "wrong_item", "not_ordered", "over_shipment", "quality", "other")
DEFAULT_CEILING_PCT = 10.0

receipts = Table(
    "receipts", metadata,
    *doc_columns(),                                   # posted | reversed
    Column("po_id", String, nullable=False, index=True),
    Column("vendor_id", String, nullable=False),
    Column("warehouse_id", String, nullable=False),
    Column("received_on", String, nullable=False),
    Column("packing_slip", String),
    Column("note", Text),
    Column("je_id", String),
    Column("reversed_on", String),
    Column("reversal_je_id", String),
)

receipt_lines = Table(
    "receipt_lines", metadata,
    Column("receipt_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("po_line", Integer, nullable=False),
    Column("ordered_item_id", String),
    Column("item_id", String),                        # what actually arrived
    Column("substitution", Integer, nullable=False, default=0),
    Column("qty_received", Float, nullable=False),
    Column("qty_refused", Float, nullable=False, default=0.0),
    Column("refusal_reason", String),
    Column("lot_no", String),
    Column("expiry", String),
    Column("location_id", String),
    Column("unit_price", Float, nullable=False),      # PO price
    Column("value_cents", Integer, nullable=False),   # GRNI value: qty received x PO price
    Column("std_value_cents", Integer, nullable=False),
)

register_object("receipt", receipts, [(receipt_lines, "receipt_id")])
