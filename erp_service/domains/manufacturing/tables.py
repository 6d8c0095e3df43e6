"""Manufacturing tables: work orders, component issues, completions, WIP value movements."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

# The domains below manufacturing, imported before its tables as the flat module was: tables register
# on the shared MetaData in import order, and the scenario database's bytes follow that order.
from .. import inventory, ledger, masterdata  # noqa: F401

work_orders = Table(
    "work_orders", metadata,
    *doc_columns(),                  # planned | released | in_progress | completed | closed | cancelled
    Column("item_id", String, nullable=False, index=True),
    Column("qty", Float, nullable=False),
    Column("qty_completed", Float, nullable=False, default=0.0),
    Column("warehouse_id", String, nullable=False),
    Column("location_id", String),                    # where completions go
    Column("start_date", String),
    Column("due_date", String, nullable=False),
    Column("bom_date", String, nullable=False),       # the BOM effectivity date used
    Column("source", String, nullable=False, default="manual"),   # manual | mrp
    Column("note", Text),
    Column("released_on", String),
    Column("closed_on", String),
    Column("variance_cents", Integer),
)

wo_issues = Table(
    "wo_issues", metadata,
    Column("id", String, primary_key=True),           # WOI-10001
    Column("wo_id", String, nullable=False, index=True),
    Column("item_id", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("value_cents", Integer, nullable=False),
    Column("picks", Text, nullable=False),            # JSON: where the stock came from
    Column("status", String, nullable=False),         # posted | reversed
    Column("on_date", String, nullable=False),
    Column("by_user", String),
    Column("reversed_on", String),
    Column("created_wall", String),
)

wo_completions = Table(
    "wo_completions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("wo_id", String, nullable=False, index=True),
    Column("qty", Float, nullable=False),
    Column("value_cents", Integer, nullable=False),
    Column("location_id", String),
    Column("lot_no", String),
    Column("on_date", String, nullable=False),
    Column("by_user", String),
)

wip_txns = Table(
    "wip_txns", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("wo_id", String, nullable=False, index=True),
    Column("on_date", String, nullable=False),
    Column("kind", String, nullable=False),           # issue | issue_reversal | completion | variance
    Column("ref", String),
    Column("value_cents", Integer, nullable=False),
)

register_object("work_order", work_orders, [(wo_issues, "wo_id"), (wo_completions, "wo_id")])
