"""Sales' tables: customers, ship-to addresses, price lists, sales orders and shipments."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

EPS = 1e-9


customers = Table(
    "customers", metadata,
    Column("id", String, primary_key=True),               # C-0101
    Column("name", String, nullable=False),
    Column("status", String, nullable=False, default="active"),    # active | inactive
    Column("terms", String, nullable=False),              # terms.id
    Column("credit_limit_cents", Integer, nullable=False, default=0),
    Column("credit_hold", Integer, nullable=False, default=0),
    Column("price_list_id", String),
    Column("tax_status", String, nullable=False, default="taxable"),   # taxable | exempt
    Column("tax_rate", Float, nullable=False, default=0.0),            # percent, e.g. 7.25
    Column("parent_id", String),                          # a parent that may pay for this customer
    Column("email", String),
    Column("phone", String),
    Column("address", Text),
    Column("contact", String),
    Column("created_on", String),
)


ship_to = Table(
    "ship_to", metadata,
    Column("id", String, primary_key=True),               # C-0101-01
    Column("customer_id", String, nullable=False, index=True),
    Column("name", String, nullable=False),
    Column("address", Text, nullable=False),
    Column("is_default", Integer, nullable=False, default=0),
)


price_lists = Table(
    "price_lists", metadata,
    Column("id", String, primary_key=True),               # PL-DIST
    Column("name", String, nullable=False),
)


price_list_items = Table(
    "price_list_items", metadata,
    Column("price_list_id", String, primary_key=True),
    Column("item_id", String, primary_key=True),
    Column("min_qty", Float, primary_key=True, default=0.0),
    Column("unit_price", Float, nullable=False),
)


sales_orders = Table(
    "sales_orders", metadata,
    *doc_columns(),
    Column("customer_id", String, nullable=False, index=True),
    Column("ship_to_id", String),
    Column("order_date", String, nullable=False),
    Column("requested_date", String),
    Column("customer_po", String),
    Column("warehouse_id", String),
    Column("hold_reason", String),                        # credit | pricing (while on_hold)
    Column("note", Text),
)


so_lines = Table(
    "so_lines", metadata,
    Column("so_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("item_id", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("unit_price", Float, nullable=False),
    Column("list_price", Float),
    Column("qty_allocated", Float, nullable=False, default=0.0),
    Column("qty_shipped", Float, nullable=False, default=0.0),
    Column("status", String, nullable=False, default="open"),    # open | shipped | cancelled
)


shipments = Table(
    "shipments", metadata,
    *doc_columns(),                                       # status: shipped | invoiced
    Column("so_id", String, nullable=False, index=True),
    Column("customer_id", String, nullable=False),
    Column("ship_to_id", String),
    Column("ship_date", String, nullable=False),
    Column("cost_cents", Integer, nullable=False, default=0),
    Column("je_id", String),
    Column("invoice_id", String),
    Column("carrier", String),
    Column("tracking", String),
)


shipment_lines = Table(
    "shipment_lines", metadata,
    Column("shipment_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("so_line", Integer, nullable=False),
    Column("item_id", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("warehouse_id", String, nullable=False),
    Column("location_id", String),
    Column("lot_no", String),
    Column("expiry", String),
    Column("cost_cents", Integer, nullable=False),
)


register_object("customer", customers, [(ship_to, "customer_id")])


register_object("sales_order", sales_orders, [(so_lines, "so_id")])


register_object("shipment", shipments, [(shipment_lines, "shipment_id")])


OPEN_ORDER_STATUSES = ("entered", "released", "allocated", "partially_shipped")


SHIPPABLE = ("released", "allocated", "partially_shipped")


HOLD_REASONS = ("credit", "pricing")


MAX_LINE_CENTS = 10**14
