"""Sales: customers (credit limits, terms, price lists, ship-to, tax status, credit hold),
price lists, sales orders with the automatic credit check, allocation, shipments picked
first-expiry-first, the warehouse actor and the sales-margin report.

Order lifecycle: entered → (credit check) on_hold | released → allocated → partially_shipped →
shipped → invoiced; cancelled from any state before the first shipment. The credit check puts a
new order on hold (reason ``credit``) when the customer is on credit hold or when open AR plus
open orders plus this order exceed the credit limit; an order priced below its price list goes
on hold with reason ``pricing``. Only a role holding ``so.release_hold`` (the credit manager)
releases a hold. Shipments never exceed the open quantity or the stock; each one posts
COGS / inventory at standard cost through `inventory.issue_fefo`. Invoicing a shipment is in
`receivables.py`.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Literal

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field
from sqlalchemy import Column, Float, Integer, String, Table, Text, func, or_, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..kernel.errors import invalid, not_found, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Amount, Quantity, from_cents, q4, to_cents
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from ..sim import SectionModel, WorldDate, actor, world_section
from . import ledger
from .masterdata import get_item

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


#: The largest line amount accepted (cents): keeps every sum well inside SQLite's integers.
MAX_LINE_CENTS = 10**14


def amount_cents(qty: float, unit_price: float) -> int:
    """Line amount in cents, rounded half up."""
    return to_cents(Decimal(str(qty)) * Decimal(str(unit_price)))


def check_line_amount(qty: float, unit_price: float) -> None:
    """422 when a line's amount is beyond what the ledger can hold."""
    if amount_cents(qty, unit_price) >= MAX_LINE_CENTS:
        raise invalid(f"A line of {qty} at {unit_price} is out of range.")


# Customers and prices ---------------------------------------------------------------------------

def get_customer(tx: Tx, customer_id: str) -> dict[str, Any]:
    """The customer row, or 404."""
    return tx.get(customers, customer_id, "customer")


def list_price(tx: Tx, customer: dict[str, Any], item_id: str, qty: float) -> float | None:
    """The customer's price-list price for `qty` (highest break reached), else the item's list price."""
    if customer.get("price_list_id"):
        row = tx.one(select(price_list_items.c.unit_price).where(
            price_list_items.c.price_list_id == customer["price_list_id"], price_list_items.c.item_id == item_id,
            price_list_items.c.min_qty <= qty + EPS).order_by(price_list_items.c.min_qty.desc()))
        if row:
            return q4(row["unit_price"])
    item = get_item(tx, item_id)
    return q4(item["list_price"]) if item.get("list_price") is not None else None


def open_orders_cents(tx: Tx, customer_id: str, exclude: str | None = None) -> int:
    """Unshipped value of the customer's open (not held) orders, plus shipped-but-uninvoiced value."""
    rows = tx.all(select(so_lines.c.qty, so_lines.c.qty_shipped, so_lines.c.unit_price, so_lines.c.status)
                  .join(sales_orders, sales_orders.c.id == so_lines.c.so_id)
                  .where(sales_orders.c.customer_id == customer_id,
                         sales_orders.c.status.in_(OPEN_ORDER_STATUSES),
                         sales_orders.c.id != (exclude or "")))
    total = sum(amount_cents(max(r["qty"] - r["qty_shipped"], 0.0), r["unit_price"])
                for r in rows if r["status"] == "open")
    shipped = tx.all(select(shipment_lines.c.qty, so_lines.c.unit_price)
                     .join(shipments, shipments.c.id == shipment_lines.c.shipment_id)
                     .join(so_lines, (so_lines.c.so_id == shipments.c.so_id)
                           & (so_lines.c.line_no == shipment_lines.c.so_line))
                     .where(shipments.c.customer_id == customer_id, shipments.c.invoice_id.is_(None)))
    return total + sum(amount_cents(r["qty"], r["unit_price"]) for r in shipped)


def open_ar_cents(tx: Tx, customer_id: str) -> int:
    """Open receivables of the customer (from `receivables`, if installed)."""
    try:
        from .receivables import customer_open_ar_cents
    except ImportError:  # receivables not present in this build
        return 0
    return customer_open_ar_cents(tx.conn, customer_id)


def customer_view(tx: Tx, customer_id: str) -> dict[str, Any]:
    """A customer with exposure: open AR, open orders, available credit, ship-to addresses."""
    c = get_customer(tx, customer_id)
    ar, orders = open_ar_cents(tx, customer_id), open_orders_cents(tx, customer_id)
    return {"id": c["id"], "name": c["name"], "status": c["status"], "terms": c["terms"],
            "credit_limit": from_cents(c["credit_limit_cents"]), "credit_hold": bool(c["credit_hold"]),
            "price_list_id": c["price_list_id"], "tax_status": c["tax_status"], "tax_rate": c["tax_rate"],
            "parent_id": c["parent_id"], "email": c["email"], "phone": c["phone"], "address": c["address"],
            "contact": c["contact"], "open_ar": from_cents(ar), "open_orders": from_cents(orders),
            "available_credit": from_cents(c["credit_limit_cents"] - ar - orders),
            "ship_to": [{"id": s["id"], "name": s["name"], "address": s["address"], "is_default": bool(s["is_default"])}
                        for s in tx.rows(ship_to, customer_id=customer_id)]}


def update_customer(tx: Tx, customer_id: str, body: CustomerPatch) -> dict[str, Any]:
    """Change a customer's credit limit, credit hold or terms."""
    get_customer(tx, customer_id)
    values: dict[str, Any] = {}
    if body.credit_limit is not None:
        values["credit_limit_cents"] = to_cents(body.credit_limit)
    if body.credit_hold is not None:
        values["credit_hold"] = int(body.credit_hold)
    if body.terms is not None:
        if tx.find(ledger.terms, id=body.terms) is None:
            raise invalid(f"Unknown terms {body.terms!r}.")
        values["terms"] = body.terms
    if not values:
        raise invalid("Nothing to change: give credit_limit, credit_hold or terms.")
    tx.touch("customer", customer_id)
    tx.update(customers, customer_id, **values)
    return customer_view(tx, customer_id)


# Orders -------------------------------------------------------------------------------------------

def order_total_cents(tx: Tx, so_id: str) -> int:
    """Value of the order's lines that are not cancelled."""
    return sum(amount_cents(l["qty"], l["unit_price"]) for l in tx.rows(so_lines, so_id=so_id)
               if l["status"] != "cancelled")


def credit_check(tx: Tx, so_id: str) -> str | None:
    """The hold reason the order needs now (``credit``/``pricing``), or None."""
    so = tx.get(sales_orders, so_id, "sales order")
    cust = get_customer(tx, so["customer_id"])
    if cust["credit_hold"]:
        return "credit"
    exposure = open_ar_cents(tx, cust["id"]) + open_orders_cents(tx, cust["id"], exclude=so_id) \
        + order_total_cents(tx, so_id)
    if exposure > cust["credit_limit_cents"]:
        return "credit"
    for l in tx.rows(so_lines, so_id=so_id):
        if l["status"] != "cancelled" and l["list_price"] is not None and l["unit_price"] < l["list_price"] - EPS:
            return "pricing"
    return None


def _line_price(tx: Tx, cust: dict[str, Any], item_id: str, qty: float, given: Decimal | None) -> tuple[float, float | None]:
    listed = list_price(tx, cust, item_id, qty)
    if given is None:
        if listed is None:
            raise invalid(f"Item {item_id} has no price for customer {cust['id']}; give unit_price.")
        return listed, listed
    return q4(given), listed


def create_order(tx: Tx, body: SalesOrderIn) -> dict[str, Any]:
    """Enter an order and run the credit check: it ends released or on hold."""
    cust = get_customer(tx, body.customer_id)
    if cust["status"] != "active":
        raise refused("customer_inactive", f"Customer {cust['id']} is inactive; no new orders.")
    if body.ship_to_id is not None:
        st = tx.find(ship_to, id=body.ship_to_id)
        if st is None or st["customer_id"] != cust["id"]:
            raise invalid(f"Ship-to {body.ship_to_id} is not an address of {cust['id']}.")
        ship_to_id = body.ship_to_id
    else:
        st = tx.one(select(ship_to.c.id).where(ship_to.c.customer_id == cust["id"])
                    .order_by(ship_to.c.is_default.desc(), ship_to.c.id))
        ship_to_id = st["id"] if st else None
    if body.warehouse_id is not None:
        from .masterdata import warehouses
        if tx.find(warehouses, id=body.warehouse_id) is None:
            raise not_found("warehouse", body.warehouse_id)
    so = tx.create_doc("sales_order", sales_orders, "SO", "entered", customer_id=cust["id"], ship_to_id=ship_to_id,
                       order_date=tx.business_date,
                       requested_date=body.requested_date.isoformat() if body.requested_date else None,
                       customer_po=body.customer_po, warehouse_id=body.warehouse_id, note=body.note)
    for n, line in enumerate(body.lines, start=1):
        get_item(tx, line.item_id)
        price, listed = _line_price(tx, cust, line.item_id, float(line.qty), line.unit_price)
        check_line_amount(float(line.qty), price)
        tx.insert(so_lines, so_id=so["id"], line_no=n, item_id=line.item_id, qty=q4(line.qty), unit_price=price,
                  list_price=listed, qty_allocated=0.0, qty_shipped=0.0, status="open")
    _apply_check(tx, so["id"])
    return order_view(tx, so["id"])


def _apply_check(tx: Tx, so_id: str) -> None:
    reason = credit_check(tx, so_id)
    if reason:
        tx.set_status("sales_order", sales_orders, so_id, "on_hold", f"auto {reason} hold", hold_reason=reason)
    elif tx.get(sales_orders, so_id)["status"] == "entered":
        tx.set_status("sales_order", sales_orders, so_id, "released", "credit check passed")


def update_line(tx: Tx, so_id: str, line_no: int, body: SoLinePatch) -> dict[str, Any]:
    """Change an open line's quantity or price; a released order is re-checked."""
    so = tx.get(sales_orders, so_id, "sales order")
    if so["status"] not in ("entered", "on_hold", "released", "allocated", "partially_shipped"):
        raise refused("not_editable", f"Sales order {so_id} is {so['status']}; its lines cannot change.")
    line = tx.find(so_lines, so_id=so_id, line_no=line_no)
    if line is None:
        raise not_found(f"line of {so_id}", line_no)
    if line["status"] != "open":
        raise refused("line_not_open", f"Line {line_no} of {so_id} is {line['status']}.")
    if body.qty is None and body.unit_price is None:
        raise invalid("Nothing to change: give qty or unit_price.")
    tx.touch("sales_order", so_id)
    values: dict[str, Any] = {}
    if body.qty is not None:
        if float(body.qty) < line["qty_shipped"] - EPS:
            raise refused("below_shipped", f"Line {line_no} has {line['qty_shipped']} shipped already.")
        values["qty"] = q4(body.qty)
        values["qty_allocated"] = min(line["qty_allocated"], q4(body.qty))
    if body.unit_price is not None:
        if line["qty_shipped"] > EPS:
            raise refused("not_editable", f"Line {line_no} has shipped; its price cannot change.")
        values["unit_price"] = q4(body.unit_price)
    check_line_amount(values.get("qty", line["qty"]), values.get("unit_price", line["unit_price"]))
    tx.conn.execute(so_lines.update().where(so_lines.c.so_id == so_id, so_lines.c.line_no == line_no).values(**values))
    if so["status"] in ("released", "allocated"):
        reason = credit_check(tx, so_id)
        if reason:
            _release_allocations(tx, so_id)
            tx.set_status("sales_order", sales_orders, so_id, "on_hold", f"auto {reason} hold after change",
                          hold_reason=reason)
    return order_view(tx, so_id)


def _release_allocations(tx: Tx, so_id: str) -> None:
    tx.conn.execute(so_lines.update().where(so_lines.c.so_id == so_id).values(qty_allocated=0.0))


def hold_order(tx: Tx, so_id: str, body: HoldIn) -> dict[str, Any]:
    """Put an order on hold by hand."""
    _release_allocations_if(tx, so_id)
    tx.set_status("sales_order", sales_orders, so_id, "on_hold", body.note or f"{body.reason} hold",
                  allowed_from=["entered", "released", "allocated", "partially_shipped"], hold_reason=body.reason)
    return order_view(tx, so_id)


def _release_allocations_if(tx: Tx, so_id: str) -> None:
    if tx.find(sales_orders, id=so_id) is None:
        raise not_found("sales order", so_id)
    tx.touch("sales_order", so_id)
    _release_allocations(tx, so_id)


def release_order(tx: Tx, so_id: str, body: ReleaseIn | None) -> dict[str, Any]:
    """Release a held order (the credit manager's decision)."""
    so = tx.get(sales_orders, so_id, "sales order")
    shipped = any(l["qty_shipped"] > EPS for l in tx.rows(so_lines, so_id=so_id))
    tx.set_status("sales_order", sales_orders, so_id, "partially_shipped" if shipped else "released",
                  (body.note if body and body.note else "hold released"), allowed_from=["on_hold"], hold_reason=None)
    return order_view(tx, so["id"])


def cancel_order(tx: Tx, so_id: str, body: ReleaseIn | None) -> dict[str, Any]:
    """Cancel an order that has not shipped."""
    lines = tx.rows(so_lines, so_id=so_id)
    if tx.find(sales_orders, id=so_id) and any(l["qty_shipped"] > EPS for l in lines):
        raise refused("has_shipments", f"Sales order {so_id} has shipped; it cannot be cancelled.")
    tx.set_status("sales_order", sales_orders, so_id, "cancelled", (body.note if body and body.note else "cancelled"),
                  allowed_from=["entered", "on_hold", "released", "allocated"], hold_reason=None)
    tx.conn.execute(so_lines.update().where(so_lines.c.so_id == so_id).values(status="cancelled", qty_allocated=0.0))
    return order_view(tx, so_id)


def _allocated_elsewhere(tx: Tx, item_id: str, so_id: str) -> float:
    stmt = (select(func.coalesce(func.sum(so_lines.c.qty_allocated - so_lines.c.qty_shipped), 0.0))
            .join(sales_orders, sales_orders.c.id == so_lines.c.so_id)
            .where(so_lines.c.item_id == item_id, so_lines.c.so_id != so_id, so_lines.c.status == "open",
                   sales_orders.c.status.in_(("allocated", "partially_shipped")),
                   so_lines.c.qty_allocated > so_lines.c.qty_shipped))
    return float(tx.scalar(stmt) or 0.0)


def allocate_order(tx: Tx, so_id: str) -> dict[str, Any]:
    """Reserve stock for every open line (refused if the free stock does not cover them)."""
    from .inventory import balance
    so = tx.get(sales_orders, so_id, "sales order")
    if so["status"] == "on_hold":
        raise refused("on_hold", f"Sales order {so_id} is on {so['hold_reason']} hold.")
    if so["status"] == "partially_shipped":
        tx.touch("sales_order", so_id)      # the remainder is allocated; the status stays
    else:
        tx.set_status("sales_order", sales_orders, so_id, "allocated", "stock allocated", allowed_from=["released"])
    for l in tx.rows(so_lines, so_id=so_id):
        if l["status"] != "open":
            continue
        need = q4(l["qty"] - l["qty_shipped"])
        free = q4(balance(tx, l["item_id"], so["warehouse_id"]) - _allocated_elsewhere(tx, l["item_id"], so_id))
        if free + EPS < need:
            raise refused("insufficient_stock", f"Only {max(free, 0)} of {l['item_id']} is free; line {l['line_no']} "
                                                f"needs {need}.", item_id=l["item_id"], free=free, needed=need)
        tx.conn.execute(so_lines.update().where(so_lines.c.so_id == so_id, so_lines.c.line_no == l["line_no"])
                        .values(qty_allocated=q4(l["qty"])))
    return order_view(tx, so_id)


def order_view(tx: Tx, so_id: str) -> dict[str, Any]:
    """An order with lines, totals, history, hold and links."""
    so = tx.get(sales_orders, so_id, "sales order")
    lines = tx.rows(so_lines, so_id=so_id)
    ships = tx.rows(shipments, so_id=so_id)
    return {
        "id": so["id"], "status": so["status"], "customer_id": so["customer_id"], "ship_to_id": so["ship_to_id"],
        "order_date": so["order_date"], "requested_date": so["requested_date"], "customer_po": so["customer_po"],
        "warehouse_id": so["warehouse_id"], "hold_reason": so["hold_reason"], "note": so["note"],
        "created_by": so["created_by"], "total": from_cents(order_total_cents(tx, so_id)),
        "lines": [{"line_no": l["line_no"], "item_id": l["item_id"], "qty": l["qty"], "unit_price": l["unit_price"],
                   "list_price": l["list_price"], "qty_allocated": l["qty_allocated"],
                   "qty_shipped": l["qty_shipped"], "open_qty": q4(max(l["qty"] - l["qty_shipped"], 0.0))
                   if l["status"] == "open" else 0.0, "status": l["status"],
                   "amount": from_cents(amount_cents(l["qty"], l["unit_price"]))} for l in lines],
        "holds": [{"reason": so["hold_reason"]}] if so["status"] == "on_hold" else [],
        "history": tx.history("sales_order", so_id),
        "links": {"shipments": [s["id"] for s in ships],
                  "ar_invoices": sorted({s["invoice_id"] for s in ships if s["invoice_id"]})},
    }


# Shipments ------------------------------------------------------------------------------------------

def create_shipment(tx: Tx, body: ShipmentIn) -> dict[str, Any]:
    """Ship open quantities of a released order, first-expiry-first; posts COGS / inventory."""
    from .inventory import issue_fefo
    so = tx.get(sales_orders, body.so_id, "sales order")
    if so["status"] == "on_hold":
        raise refused("on_hold", f"Sales order {so['id']} is on {so['hold_reason']} hold; it cannot ship.")
    if so["status"] not in SHIPPABLE:
        raise refused("bad_status", f"Sales order {so['id']} is {so['status']}; only released orders ship.",
                      status=so["status"])
    lines = {l["line_no"]: l for l in tx.rows(so_lines, so_id=so["id"])}
    wanted: list[tuple[int, float]] = []
    if body.lines:
        seen = set()
        for sl in body.lines:
            if sl.line_no in seen:
                raise invalid(f"Line {sl.line_no} appears twice.")
            seen.add(sl.line_no)
            if sl.line_no not in lines:
                raise not_found(f"line of {so['id']}", sl.line_no)
            wanted.append((sl.line_no, q4(sl.qty)))
    else:
        wanted = [(n, q4(l["qty"] - l["qty_shipped"])) for n, l in sorted(lines.items())
                  if l["status"] == "open" and l["qty"] - l["qty_shipped"] > EPS]
    if not wanted:
        raise refused("nothing_to_ship", f"Sales order {so['id']} has no open quantity.")
    tx.touch("sales_order", so["id"])
    sh = tx.create_doc("shipment", shipments, "SHP", "shipped", so_id=so["id"], customer_id=so["customer_id"],
                       ship_to_id=so["ship_to_id"], ship_date=tx.business_date, cost_cents=0,
                       carrier=body.carrier, tracking=body.tracking)
    total_cost, out_no = 0, 0
    for line_no, qty in wanted:
        l = lines[line_no]
        open_qty = q4(l["qty"] - l["qty_shipped"])
        if l["status"] != "open":
            raise refused("line_not_open", f"Line {line_no} of {so['id']} is {l['status']}.")
        if qty > open_qty + EPS:
            raise refused("over_open_qty", f"Line {line_no} of {so['id']} has {open_qty} open; {qty} cannot ship.",
                          line_no=line_no, open_qty=open_qty)
        cost, picks = issue_fefo(tx, item_id=l["item_id"], qty=qty, kind="shipment", doc_type="shipment",
                                 doc_id=sh["id"], warehouse_id=so["warehouse_id"], doc_line=line_no)
        for p in picks:
            out_no += 1
            tx.insert(shipment_lines, shipment_id=sh["id"], line_no=out_no, so_line=line_no, item_id=l["item_id"],
                      qty=p["qty"], warehouse_id=p["warehouse_id"], location_id=p["location_id"],
                      lot_no=p["lot_no"], expiry=p["expiry"], cost_cents=0)
        total_cost += cost
        shipped = q4(l["qty_shipped"] + qty)
        tx.conn.execute(so_lines.update().where(so_lines.c.so_id == so["id"], so_lines.c.line_no == line_no)
                        .values(qty_shipped=shipped, status="shipped" if shipped >= l["qty"] - EPS else "open"))
    _fix_pick_costs(tx, sh["id"])
    je = ledger.post(tx, source="shipment", source_ref=sh["id"], memo=f"Shipment {sh['id']} for {so['id']}",
                     lines=[ledger.Line("rule:cogs", total_cost, doc_ref=sh["id"]),
                            ledger.Line("rule:inventory", -total_cost, doc_ref=sh["id"])])
    tx.update(shipments, sh["id"], cost_cents=total_cost, je_id=je or None)
    remaining = [l for l in tx.rows(so_lines, so_id=so["id"]) if l["status"] == "open"]
    tx.set_status("sales_order", sales_orders, so["id"], "partially_shipped" if remaining else "shipped",
                  f"shipment {sh['id']}")
    return shipment_view(tx, sh["id"])


def _fix_pick_costs(tx: Tx, shipment_id: str) -> None:
    """Line costs from the inventory transactions themselves, so they sum to what was posted."""
    from .inventory import inventory_txns
    txns = tx.all(select(inventory_txns).where(inventory_txns.c.doc_type == "shipment",
                                               inventory_txns.c.doc_id == shipment_id).order_by(inventory_txns.c.id))
    for n, t in enumerate(txns, start=1):
        tx.conn.execute(shipment_lines.update().where(shipment_lines.c.shipment_id == shipment_id,
                                                      shipment_lines.c.line_no == n)
                        .values(cost_cents=-int(t["value_cents"])))


def shipment_view(tx: Tx, shipment_id: str) -> dict[str, Any]:
    """A shipment with its picks (lot, expiry, location), cost, history and links."""
    sh = tx.get(shipments, shipment_id, "shipment")
    return {"id": sh["id"], "status": sh["status"], "so_id": sh["so_id"], "customer_id": sh["customer_id"],
            "ship_to_id": sh["ship_to_id"], "ship_date": sh["ship_date"], "cost": from_cents(sh["cost_cents"]),
            "carrier": sh["carrier"], "tracking": sh["tracking"], "created_by": sh["created_by"],
            "lines": [{"line_no": l["line_no"], "so_line": l["so_line"], "item_id": l["item_id"], "qty": l["qty"],
                       "warehouse_id": l["warehouse_id"], "location_id": l["location_id"], "lot_no": l["lot_no"],
                       "expiry": l["expiry"], "cost": from_cents(l["cost_cents"])}
                      for l in tx.rows(shipment_lines, shipment_id=shipment_id)],
            "history": tx.history("shipment", shipment_id),
            "links": {"sales_order": sh["so_id"], "journal_entry": sh["je_id"], "ar_invoice": sh["invoice_id"]}}


# The warehouse actor ---------------------------------------------------------------------------------

class WarehouseReport(SectionModel):
    """One scheduled warehouse report: sent on the first workday on or after `on`, once."""

    on: WorldDate
    box: str = "warehouse"
    sender: str = Field("warehouse@company.example", alias="from")
    subject: str = "Warehouse report"
    body: str = ""
    lines: list[str | int | float] | None = None      # attached as a PDF when given
    filename: str | None = None


class WarehouseSection(SectionModel):
    """``warehouse``: the reports the warehouse sends by message."""

    reports: list[WarehouseReport] = []


world_section("warehouse", WarehouseSection, owner=__name__, doc="scheduled warehouse reports by message")


@actor("warehouse")
def _warehouse(day) -> None:
    """Scheduled warehouse reports (counts, damage) by message, from ``world["warehouse"]``:
    ``{"reports": [{"on": "2026-10-12", "box": "warehouse", "subject": ..., "body": ...,
    "lines": [...] (optional: attached as a PDF)}]}``, each on the first workday on or after
    its date, once."""
    from ..sim import sim_log
    from .comms import deliver, make_pdf
    section = day.world.section("warehouse", {})
    reports = section.get("reports", []) if isinstance(section, dict) else []
    if not reports:
        return
    sent = set(day.look(lambda tx: [r["ref"] for r in tx.all(select(sim_log.c.ref).where(
        sim_log.c.kind == "warehouse_report"))]))
    for i, rep in enumerate(reports):
        if str(rep.get("on", "9999")) > day.date or f"report:{i}" in sent:
            continue
        atts = [(rep.get("filename", f"warehouse-report-{i + 1}.pdf"),
                 make_pdf(rep.get("subject", "Warehouse report"), [str(x) for x in rep["lines"]]))] \
            if rep.get("lines") else []
        day.act("sys-mail", "msg.deliver", "/sim/warehouse", {"report": i}, lambda tx, rep=rep, atts=atts: deliver(
            tx, rep.get("box", "warehouse"), rep.get("from", "warehouse@company.example"),
            rep.get("subject", "Warehouse report"), rep.get("body", ""), atts))
        day.log("warehouse", "warehouse_report", f"report:{i}", {"subject": rep.get("subject")})


# Sales margin report ----------------------------------------------------------------------------------

def sales_margin(tx: Tx, params: Any) -> dict:
    """Revenue (invoiced lines), cost (shipped cost of those lines) and margin, by customer and item."""
    from .receivables import ar_invoice_lines, ar_invoices
    start = params.date_from.isoformat() if params.date_from else "0000-01-01"
    end = params.date_to.isoformat() if params.date_to else tx.business_date
    stmt = (select(ar_invoices.c.customer_id, ar_invoice_lines.c.item_id,
                   func.sum(ar_invoice_lines.c.qty).label("qty"),
                   func.sum(ar_invoice_lines.c.amount_cents).label("revenue"),
                   func.sum(ar_invoice_lines.c.cost_cents).label("cost"))
            .join(ar_invoices, ar_invoices.c.id == ar_invoice_lines.c.invoice_id)
            .where(ar_invoices.c.invoice_date >= start, ar_invoices.c.invoice_date <= end,
                   ar_invoices.c.status != "void")
            .group_by(ar_invoices.c.customer_id, ar_invoice_lines.c.item_id)
            .order_by(ar_invoices.c.customer_id, ar_invoice_lines.c.item_id))
    if params.customer_id:
        stmt = stmt.where(ar_invoices.c.customer_id == params.customer_id)
    rows, rev_t, cost_t = [], 0, 0
    for r in tx.all(stmt):
        rev, cost = int(r["revenue"] or 0), int(r["cost"] or 0)
        rev_t, cost_t = rev_t + rev, cost_t + cost
        rows.append({"customer_id": r["customer_id"], "item_id": r["item_id"], "qty": q4(r["qty"] or 0),
                     "revenue": from_cents(rev), "cost": from_cents(cost), "margin": from_cents(rev - cost),
                     "margin_pct": round(100 * (rev - cost) / rev, 2) if rev else None})
    return {"date_from": start, "date_to": end, "rows": rows, "total_revenue": from_cents(rev_t),
            "total_cost": from_cents(cost_t), "total_margin": from_cents(rev_t - cost_t),
            "margin_pct": round(100 * (rev_t - cost_t) / rev_t, 2) if rev_t else None}


def _register_reports() -> None:
    from .reports import ReportParams, register_report

    class SalesMarginParams(ReportParams):
        date_from: dt.date | None = None
        date_to: dt.date | None = None
        customer_id: str | None = None

    register_report("sales-margin", sales_margin, SalesMarginParams, title="Sales margin by customer and item")


_register_reports()


# Router ----------------------------------------------------------------------------------------------

class ShipToOut(BaseModel):
    id: str
    name: str
    address: str
    is_default: bool


class CustomerOut(BaseModel):
    id: str
    name: str
    status: str
    terms: str
    credit_limit: float
    credit_hold: bool
    price_list_id: str | None = None
    tax_status: str
    tax_rate: float
    parent_id: str | None = None
    email: str | None = None
    phone: str | None = None
    address: str | None = None
    contact: str | None = None
    open_ar: float
    open_orders: float
    available_credit: float
    ship_to: list[ShipToOut]


class CustomerPatch(In):
    credit_limit: Amount | None = Field(None, ge=0)
    credit_hold: bool | None = None
    terms: str | None = None


class PriceListItemOut(BaseModel):
    item_id: str
    min_qty: float
    unit_price: float


class PriceListOut(BaseModel):
    id: str
    name: str
    items: list[PriceListItemOut]


class SoLineIn(In):
    item_id: str = Field(..., min_length=1)
    qty: Quantity = Field(..., gt=0)
    unit_price: Amount | None = Field(None, ge=0, description="Defaults to the customer's price list.")


class SalesOrderIn(In):
    customer_id: str = Field(..., min_length=1)
    lines: list[SoLineIn] = Field(..., min_length=1, max_length=200)
    ship_to_id: str | None = None
    requested_date: dt.date | None = None
    customer_po: str | None = Field(None, max_length=100)
    warehouse_id: str | None = None
    note: str | None = Field(None, max_length=2000)


class SoLinePatch(In):
    qty: Quantity | None = Field(None, gt=0)
    unit_price: Amount | None = Field(None, ge=0)


class HoldIn(In):
    reason: Literal["credit", "pricing"]
    note: str | None = Field(None, max_length=2000)


class ReleaseIn(In):
    note: str | None = Field(None, max_length=2000)


class SoLineOut(BaseModel):
    line_no: int
    item_id: str
    qty: float
    unit_price: float
    list_price: float | None = None
    qty_allocated: float
    qty_shipped: float
    open_qty: float
    status: str
    amount: float


class SalesOrderOut(BaseModel):
    id: str
    status: str
    customer_id: str
    ship_to_id: str | None = None
    order_date: str
    requested_date: str | None = None
    customer_po: str | None = None
    warehouse_id: str | None = None
    hold_reason: str | None = None
    note: str | None = None
    created_by: str | None = None
    total: float
    lines: list[SoLineOut]
    holds: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, Any]


class ShipLineIn(In):
    line_no: int = Field(..., ge=1, le=100_000)
    qty: Quantity = Field(..., gt=0)


class ShipmentIn(In):
    so_id: str = Field(..., min_length=1)
    lines: list[ShipLineIn] | None = Field(None, description="Default: every open quantity.")
    carrier: str | None = Field(None, max_length=100)
    tracking: str | None = Field(None, max_length=100)


class ShipmentLineOut(BaseModel):
    line_no: int
    so_line: int
    item_id: str
    qty: float
    warehouse_id: str
    location_id: str | None = None
    lot_no: str | None = None
    expiry: str | None = None
    cost: float


class ShipmentOut(BaseModel):
    id: str
    status: str
    so_id: str
    customer_id: str
    ship_to_id: str | None = None
    ship_date: str
    cost: float
    carrier: str | None = None
    tracking: str | None = None
    created_by: str | None = None
    lines: list[ShipmentLineOut]
    history: list[dict[str, Any]]
    links: dict[str, Any]


router = APIRouter(tags=["sales"])


@router.get("/customers", response_model=Envelope[Page[CustomerOut]], summary="List customers")
def list_customers(status: str | None = None, q: str | None = None, credit_hold: bool | None = None,
                   page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(customers.c.id).order_by(customers.c.id)
        if q:
            stmt = stmt.where(or_(customers.c.name.ilike(f"%{q}%"), customers.c.id.ilike(f"%{q}%")))
        listed = paginate(tx, stmt, page, status=status,
                          credit_hold=None if credit_hold is None else int(credit_hold))
        listed["items"] = [customer_view(tx, r["id"]) for r in listed["items"]]
        return listed
    return api.read(fn)


@router.get("/customers/{customer_id}", response_model=Envelope[CustomerOut],
            summary="One customer with open AR, open orders and available credit")
def get_customer_route(customer_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: customer_view(tx, customer_id), object_type="customer", object_id=customer_id)


@router.patch("/customers/{customer_id}", operation_id="customer.update", response_model=Envelope[CustomerOut],
              summary="Change a customer's credit limit, credit hold or terms")
def patch_customer(customer_id: str, body: CustomerPatch, api: Api = Depends(write_api)):
    return api.write(lambda tx: update_customer(tx, customer_id, body), object_type="customer",
                     object_id=customer_id)


@router.get("/price-lists", response_model=Envelope[Page[PriceListOut]], summary="Customer price lists")
def list_price_lists(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def render(tx: Tx, r: dict) -> dict:
        return {**r, "items": [{"item_id": i["item_id"], "min_qty": i["min_qty"], "unit_price": i["unit_price"]}
                               for i in tx.rows(price_list_items, price_list_id=r["id"])]}
    return api.read(lambda tx: paginate(tx, select(price_lists).order_by(price_lists.c.id), page,
                                        render=lambda r: render(tx, r)))


@router.get("/sales-orders", response_model=Envelope[Page[SalesOrderOut]], summary="List sales orders")
def list_orders(status: str | None = None, customer_id: str | None = None, hold_reason: str | None = None,
                page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(sales_orders).order_by(sales_orders.c.id), page,
                                        render=lambda r: order_view(tx, r["id"]), status=status,
                                        customer_id=customer_id, hold_reason=hold_reason))


@router.get("/sales-orders/{so_id}", response_model=Envelope[SalesOrderOut],
            summary="One sales order with lines, history, holds and links")
def get_order(so_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: order_view(tx, so_id), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders", operation_id="so.create", status_code=201, response_model=Envelope[SalesOrderOut],
             summary="Enter a sales order (automatic credit check: released or on hold)")
def post_order(body: SalesOrderIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_order(tx, body))


@router.patch("/sales-orders/{so_id}/lines/{line_no}", operation_id="so.update_line",
              response_model=Envelope[SalesOrderOut], summary="Change an open line's quantity or price")
def patch_order_line(so_id: str, body: SoLinePatch, line_no: int = Path(..., ge=1, le=100_000),
                     api: Api = Depends(write_api)):
    return api.write(lambda tx: update_line(tx, so_id, line_no, body), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/hold", operation_id="so.hold", status_code=201,
             response_model=Envelope[SalesOrderOut], summary="Put an order on credit or pricing hold")
def post_hold(so_id: str, body: HoldIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: hold_order(tx, so_id, body), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/release", operation_id="so.release_hold", status_code=201,
             response_model=Envelope[SalesOrderOut], summary="Release a held order (credit manager)")
def post_release(so_id: str, body: ReleaseIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_order(tx, so_id, body), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/allocate", operation_id="so.allocate", status_code=201,
             response_model=Envelope[SalesOrderOut], summary="Reserve stock for the open lines")
def post_allocate(so_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: allocate_order(tx, so_id), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/cancel", operation_id="so.cancel", status_code=201,
             response_model=Envelope[SalesOrderOut], summary="Cancel an order that has not shipped")
def post_cancel(so_id: str, body: ReleaseIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: cancel_order(tx, so_id, body), object_type="sales_order", object_id=so_id)


@router.get("/shipments", response_model=Envelope[Page[ShipmentOut]], summary="List shipments")
def list_shipments(so_id: str | None = None, customer_id: str | None = None, status: str | None = None,
                   page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(shipments).order_by(shipments.c.id), page,
                                        render=lambda r: shipment_view(tx, r["id"]), so_id=so_id,
                                        customer_id=customer_id, status=status))


@router.get("/shipments/{shipment_id}", response_model=Envelope[ShipmentOut], summary="One shipment with its picks")
def get_shipment(shipment_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: shipment_view(tx, shipment_id), object_type="shipment", object_id=shipment_id)


@router.post("/shipments", operation_id="so.ship", status_code=201, response_model=Envelope[ShipmentOut],
             summary="Ship a released order (first-expiry-first; never above open quantity or stock)")
def post_shipment(body: ShipmentIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_shipment(tx, body))
