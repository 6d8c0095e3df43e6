"""Sales orders: entry with the automatic credit check, line changes, holds and release,
cancellation, allocation."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import func, select

from ...kernel.errors import invalid, not_found, refused
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from ..inventory import balance
from ..masterdata import get_item, warehouses
from .customers import amount_cents, check_line_amount, get_customer, list_price, open_ar_cents, open_orders_cents
from .schemas import AllocateIn, HoldIn, ReleaseIn, SalesOrderIn, SoLinePatch
from .tables import EPS, sales_orders, ship_to, shipments, so_lines


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
        ship_to_id: str | None = body.ship_to_id
    else:
        st = tx.one(select(ship_to.c.id).where(ship_to.c.customer_id == cust["id"])
                    .order_by(ship_to.c.is_default.desc(), ship_to.c.id))
        ship_to_id = st["id"] if st else None
    if body.warehouse_id is not None and tx.find(warehouses, id=body.warehouse_id) is None:
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


def _backordered(l: dict[str, Any]) -> float:
    """Open quantity of a line that no stock is reserved for (after an allocation with backorder)."""
    return q4(max(l["qty"] - max(l["qty_allocated"], l["qty_shipped"]), 0.0)) if l["status"] == "open" else 0.0


def allocate_order(tx: Tx, so_id: str, body: AllocateIn | None = None) -> dict[str, Any]:
    """Reserve stock for every open line in the order's warehouse: refused if the free stock
    does not cover them, unless `backorder` (then the free stock is reserved and the rest of
    each line waits as a backorder; allocating again fills backorders from new stock)."""
    backorder = bool(body and body.backorder)
    so = tx.get(sales_orders, so_id, "sales order")
    if so["status"] == "on_hold":
        raise refused("on_hold", f"Sales order {so_id} is on {so['hold_reason']} hold.")
    lines = [l for l in tx.rows(so_lines, so_id=so_id) if l["status"] == "open"]
    if so["status"] == "partially_shipped" or (so["status"] == "allocated" and any(_backordered(l) > EPS
                                                                                 for l in lines)):
        tx.touch("sales_order", so_id)      # the remainder or the backorders are allocated; the status stays
    else:
        tx.set_status("sales_order", sales_orders, so_id, "allocated", "stock allocated", allowed_from=["released"])
    for l in lines:
        need = q4(l["qty"] - l["qty_shipped"])
        # Free stock counts this order's own reservations (only other orders' are taken off).
        free = q4(balance(tx, l["item_id"], so["warehouse_id"]) - _allocated_elsewhere(tx, l["item_id"], so_id))
        if free + EPS < need and not backorder:
            raise refused("insufficient_stock", f"Only {max(free, 0)} of {l['item_id']} is free; line {l['line_no']} "
                                                f"needs {need}.", item_id=l["item_id"], free=free, needed=need)
        reserved = q4(l["qty_shipped"] + min(need, max(free, 0.0))) if backorder else q4(l["qty"])
        tx.conn.execute(so_lines.update().where(so_lines.c.so_id == so_id, so_lines.c.line_no == l["line_no"])
                        .values(qty_allocated=reserved))
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
                   "qty_shipped": l["qty_shipped"],
                   "qty_backordered": _backordered(l) if so["status"] in ("allocated", "partially_shipped") else 0.0,
                   "open_qty": q4(max(l["qty"] - l["qty_shipped"], 0.0))
                   if l["status"] == "open" else 0.0, "status": l["status"],
                   "amount": from_cents(amount_cents(l["qty"], l["unit_price"]))} for l in lines],
        "holds": [{"reason": so["hold_reason"]}] if so["status"] == "on_hold" else [],
        "history": tx.history("sales_order", so_id),
        "links": {"shipments": [s["id"] for s in ships],
                  "ar_invoices": sorted({s["invoice_id"] for s in ships if s["invoice_id"]})},
    }
