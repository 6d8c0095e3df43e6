"""Master data tables: items, warehouses and locations, lots, BOMs, work centers and routings, price agreements and breaks, approved substitutes."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text, UniqueConstraint

from ...kernel.schema import metadata
from ...kernel.tx import register_object

ITEM_TYPES = ("bar_stock", "casting", "seal", "gasket", "fitting", "subassembly", "phantom", "finished")
#: Item types the plant makes (work orders); everything else is bought (purchase orders).
MADE_TYPES = ("subassembly", "phantom", "finished")

items = Table(
    "items", metadata,
    Column("id", String, primary_key=True),               # BR-0750
    Column("description", String, nullable=False),
    Column("type", String, nullable=False),               # one of ITEM_TYPES
    Column("category", String),
    Column("uom", String, nullable=False, default="ea"),
    Column("lot_controlled", Integer, nullable=False, default=0),
    Column("shelf_life_days", Integer),
    Column("standard_cost", Float, nullable=False, default=0.0),   # per unit, 4 dp
    Column("list_price", Float),                                   # per unit, 4 dp
    Column("lead_time_days", Integer, nullable=False, default=0),
    Column("safety_stock", Float, nullable=False, default=0.0),
    Column("moq", Float, nullable=False, default=0.0),
    Column("order_multiple", Float, nullable=False, default=0.0),
    Column("preferred_vendor", String),
    Column("planner", String),
    Column("default_warehouse", String),
    Column("active", Integer, nullable=False, default=1),
)

warehouses = Table(
    "warehouses", metadata,
    Column("id", String, primary_key=True),               # WH-MAIN
    Column("name", String, nullable=False),
    Column("address", Text),
)

locations = Table(
    "locations", metadata,
    Column("id", String, primary_key=True),               # WH-MAIN-A01
    Column("warehouse_id", String, nullable=False),
    Column("name", String, nullable=False),
    Column("kind", String, nullable=False, default="stock"),   # stock | receiving | quarantine | staging
)

lots = Table(
    "lots", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", String, nullable=False),
    Column("lot_no", String, nullable=False),
    Column("expiry", String),
    Column("vendor_id", String),
    Column("first_received", String),
    UniqueConstraint("item_id", "lot_no"),
)

#: One row per BOM line: parent item, component, quantity per parent unit, scrap and effectivity.
boms = Table(
    "boms", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("parent_item", String, nullable=False, index=True),
    Column("line_no", Integer, nullable=False),
    Column("component_item", String, nullable=False),
    Column("qty_per", Float, nullable=False),
    Column("scrap_pct", Float, nullable=False, default=0.0),
    Column("effective_from", String),
    Column("effective_to", String),
    Column("pending_change", Integer, nullable=False, default=0),   # an engineering change is pending
    Column("change_note", Text),
)

work_centers = Table(
    "work_centers", metadata,
    Column("id", String, primary_key=True),               # WC-MACH
    Column("name", String, nullable=False),
    Column("daily_capacity_hours", Float, nullable=False),
)

routings = Table(
    "routings", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", String, nullable=False, index=True),
    Column("step", Integer, nullable=False),
    Column("work_center_id", String, nullable=False),
    Column("setup_hours", Float, nullable=False, default=0.0),
    Column("hours_per_unit", Float, nullable=False),
)

price_agreements = Table(
    "price_agreements", metadata,
    Column("id", String, primary_key=True),               # PA-1001
    Column("vendor_id", String, nullable=False, index=True),
    Column("item_id", String, nullable=False, index=True),
    Column("valid_from", String, nullable=False),
    Column("valid_to", String, nullable=False),
    Column("note", Text),
)

price_breaks = Table(
    "price_breaks", metadata,
    Column("agreement_id", String, primary_key=True),
    Column("min_qty", Float, primary_key=True),
    Column("unit_price", Float, nullable=False),
)

approved_substitutes = Table(
    "approved_substitutes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", String, nullable=False, index=True),
    Column("substitute_id", String, nullable=False),
    Column("vendor_id", String),                           # null = from any vendor
    Column("note", Text),
)

register_object("item", items)
