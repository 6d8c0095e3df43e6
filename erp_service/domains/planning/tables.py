"""Planning tables: demand forecasts, MRP runs and their suggestions."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

# The domains below planning, imported before its tables as the flat module was: tables register on the
# shared MetaData in import order, and the scenario database's bytes follow that order.
from .. import inventory, manufacturing, masterdata, purchasing  # noqa: F401

forecasts = Table(
    "forecasts", metadata,
    Column("item_id", String, primary_key=True),
    Column("week_start", String, primary_key=True),     # Monday of the week
    Column("qty", Float, nullable=False),
)

mrp_runs = Table(
    "mrp_runs", metadata,
    *doc_columns(),                                       # status: done
    Column("run_on", String, nullable=False),
    Column("horizon_weeks", Integer, nullable=False),
    Column("firm_days", Integer, nullable=False),
    Column("horizon_end", String, nullable=False),
    Column("suggestions", Integer, nullable=False, default=0),
)

mrp_suggestions = Table(
    "mrp_suggestions", metadata,
    Column("id", String, primary_key=True),               # SUG-10001
    Column("run_id", String, nullable=False, index=True),
    Column("kind", String, nullable=False),               # planned_po | planned_wo | expedite | defer | cancel
    Column("item_id", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("due_date", String, nullable=False),
    Column("release_date", String, nullable=False),
    Column("vendor_id", String),
    Column("po_id", String),                              # expedite / defer / cancel: the order concerned
    Column("po_line", Integer),
    Column("wo_id", String),
    Column("current_date", String),                       # expedite: when the supply is due now
    Column("firm", Integer, nullable=False, default=0),
    Column("status", String, nullable=False),             # open | released | superseded
    Column("released_doc", String),
    Column("released_by", String),
    Column("released_on", String),
    Column("note", Text),                                 # "late: ..." when the lead time is already past
    Column("created_wall", String),
)

register_object("mrp_run", mrp_runs)
register_object("mrp_suggestion", mrp_suggestions)

SUGGESTION_KINDS = ("planned_po", "planned_wo", "expedite", "defer", "cancel")
