"""Customers and prices: line amounts, list prices, open orders and AR (the credit exposure),
the customer view and its updates."""
from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from ...kernel.errors import invalid
from ...kernel.money import from_cents, q4, to_cents
from ...kernel.tx import Tx
from .. import ledger
from ..masterdata import get_item
from .schemas import CustomerPatch
from .tables import (
    EPS,
    MAX_LINE_CENTS,
    OPEN_ORDER_STATUSES,
    customers,
    price_list_items,
    sales_orders,
    ship_to,
    shipment_lines,
    shipments,
    so_lines,
)

# Receivables is downstream of sales (it invoices shipments) and registers the customer's open
# AR here; the credit check must never run without it (it would pass every order).
_OPEN_AR: list[Callable[[Any, str], int]] = []


def register_open_ar(fn: Callable[[Any, str], int]) -> None:
    """Install ``fn(conn, customer_id) -> open AR cents`` (receivables does)."""
    _OPEN_AR[:] = [fn]


def open_ar_cents(tx: Tx, customer_id: str) -> int:
    """Open receivables of the customer (from receivables)."""
    if not _OPEN_AR:
        raise RuntimeError("sales needs open AR from receivables, which is not imported")
    return _OPEN_AR[0](tx.conn, customer_id)


def amount_cents(qty: float, unit_price: float) -> int:
    """Line amount in cents, rounded half up."""
    return to_cents(Decimal(str(qty)) * Decimal(str(unit_price)))


def check_line_amount(qty: float, unit_price: float) -> None:
    """422 when a line's amount is beyond what the ledger can hold."""
    if amount_cents(qty, unit_price) >= MAX_LINE_CENTS:
        raise invalid(f"A line of {qty} at {unit_price} is out of range.")


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
