"""Sales: customers (credit limits, terms, price lists, ship-to, tax status, credit hold),
price lists, sales orders with the automatic credit check, allocation, shipments picked
first-expiry-first, and the warehouse actor.

Order lifecycle: entered → (credit check) on_hold | released → allocated → partially_shipped →
shipped → invoiced; cancelled from any state before the first shipment. The credit check puts a
new order on hold (reason ``credit``) when the customer is on credit hold or when open AR plus
open orders plus this order exceed the credit limit; an order priced below its price list goes
on hold with reason ``pricing``. Only a role holding ``so.release_hold`` (the credit manager)
releases a hold. Allocation reserves stock in the order's warehouse; with `backorder` it
reserves what is free and leaves the rest of each line on backorder (allocating again fills
it). Shipments never exceed the open quantity or the stock; each one posts
COGS / inventory at standard cost through `inventory.issue_fefo`. Invoicing a shipment is in
`receivables`, which registers the customer's open AR here (`register_open_ar`) and owns the
sales-margin report (it reads AR invoices).

Modules: `tables`, `schemas` (request bodies), `customers` (prices, exposure, open AR), `orders`,
`shipments`, `warehouse` (the actor and its world section), `routes`.
"""
from __future__ import annotations

from . import warehouse  # noqa: F401  (registers the warehouse actor)
from .customers import (
    amount_cents,
    check_line_amount,
    customer_view,
    get_customer,
    list_price,
    open_ar_cents,
    open_orders_cents,
    register_open_ar,
    update_customer,
)
from .orders import (
    allocate_order,
    cancel_order,
    create_order,
    credit_check,
    hold_order,
    order_total_cents,
    order_view,
    release_order,
    update_line,
)
from .routes import (
    CustomerOut,
    PriceListItemOut,
    PriceListOut,
    SalesOrderOut,
    ShipmentLineOut,
    ShipmentOut,
    ShipToOut,
    SoLineOut,
    router,
)
from .schemas import CustomerPatch, HoldIn, ReleaseIn, SalesOrderIn, ShipLineIn, ShipmentIn, SoLineIn, SoLinePatch
from .shipments import create_shipment, shipment_view
from .tables import (
    EPS,
    HOLD_REASONS,
    MAX_LINE_CENTS,
    OPEN_ORDER_STATUSES,
    SHIPPABLE,
    customers,
    price_list_items,
    price_lists,
    sales_orders,
    ship_to,
    shipment_lines,
    shipments,
    so_lines,
)
from .warehouse import WarehouseReport, WarehouseSection

__all__ = ["EPS", "customers", "ship_to", "price_lists", "price_list_items", "sales_orders", "so_lines", "shipments",
           "shipment_lines", "OPEN_ORDER_STATUSES", "SHIPPABLE", "HOLD_REASONS", "MAX_LINE_CENTS", "CustomerPatch",
           "SoLineIn", "SalesOrderIn", "SoLinePatch", "HoldIn", "ReleaseIn", "ShipLineIn", "ShipmentIn",
           "register_open_ar", "open_ar_cents", "amount_cents", "check_line_amount", "get_customer", "list_price",
           "open_orders_cents", "customer_view", "update_customer", "order_total_cents", "credit_check",
           "create_order", "update_line", "hold_order", "release_order", "cancel_order", "allocate_order",
           "order_view", "create_shipment", "shipment_view", "WarehouseReport", "WarehouseSection", "ShipToOut",
           "CustomerOut", "PriceListItemOut", "PriceListOut", "SoLineOut", "SalesOrderOut", "ShipmentLineOut",
           "ShipmentOut", "router"]
