"""Stock helpers used by every supply domain: value at standard, balances, moves, FEFO issues, on-hand rows."""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ...kernel.errors import invalid, not_found, refused
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from .. import masterdata
from ..masterdata import get_item, locations, lots, warehouses
from .tables import inventory_txns

EPS = 1e-9


def value_of(tx: Tx, item_id: str, qty: float) -> int:
    """Standard-cost value of `qty` units of an item, in cents."""
    item = get_item(tx, item_id)
    return int(round(qty * float(item["standard_cost"]) * 100))


def balance(tx: Tx, item_id: str, warehouse_id: str | None = None, location_id: str | None = None,
            lot_no: str | None = None, *, exact: bool = False) -> float:
    """On-hand quantity of an item, optionally narrowed to a warehouse, location and lot.
    With `exact`, None location/lot mean "no location/lot" rather than "any"."""
    stmt = select(func.coalesce(func.sum(inventory_txns.c.qty), 0.0)).where(inventory_txns.c.item_id == item_id)
    if warehouse_id is not None:
        stmt = stmt.where(inventory_txns.c.warehouse_id == warehouse_id)
    for col, val in ((inventory_txns.c.location_id, location_id), (inventory_txns.c.lot_no, lot_no)):
        if val is not None:
            stmt = stmt.where(col == val)
        elif exact:
            stmt = stmt.where(col.is_(None))
    return float(tx.scalar(stmt) or 0.0)


def check_location(tx: Tx, warehouse_id: str, location_id: str | None) -> None:
    """404 unless the warehouse exists and the location (if any) belongs to it."""
    if tx.find(warehouses, id=warehouse_id) is None:
        raise not_found("warehouse", warehouse_id)
    if location_id is not None:
        loc = tx.find(locations, id=location_id)
        if loc is None:
            raise not_found("location", location_id)
        if loc["warehouse_id"] != warehouse_id:
            raise invalid(f"Location {location_id} is not in warehouse {warehouse_id}.")


def move(tx: Tx, *, item_id: str, warehouse_id: str, qty: float, kind: str, doc_type: str, doc_id: str,
         location_id: str | None = None, lot_no: str | None = None, doc_line: int | None = None,
         value_cents: int | None = None) -> int:
    """Record one stock movement (signed qty) and return its value in cents.

    Refuses `insufficient_stock` when a withdrawal would make that exact bucket (item,
    warehouse, location, lot) negative: on-hand is never negative.
    """
    qty = q4(qty)
    if abs(qty) < EPS:
        return 0
    if qty < 0:
        have = balance(tx, item_id, warehouse_id, location_id, lot_no, exact=True)
        if have + qty < -EPS:
            where = f"{warehouse_id}{'/' + location_id if location_id else ''}{' lot ' + lot_no if lot_no else ''}"
            raise refused("insufficient_stock",
                          f"Only {q4(have)} of {item_id} is on hand at {where}; {-qty} is needed.",
                          item_id=item_id, on_hand=q4(have), needed=-qty)
    if value_cents is None:
        value_cents = value_of(tx, item_id, qty)
    tx.insert(inventory_txns, on_date=tx.business_date, item_id=item_id, warehouse_id=warehouse_id,
              location_id=location_id, lot_no=lot_no, qty=qty, value_cents=value_cents, kind=kind,
              doc_type=doc_type, doc_id=doc_id, doc_line=doc_line, by_user=tx.actor.user_id)
    return value_cents


def buckets(tx: Tx, item_id: str, warehouse_id: str | None = None) -> list[dict[str, Any]]:
    """Positive stock buckets of an item, first-expiry-first (no expiry last), then lot, location."""
    stmt = (select(inventory_txns.c.warehouse_id, inventory_txns.c.location_id, inventory_txns.c.lot_no,
                   func.sum(inventory_txns.c.qty).label("qty"))
            .where(inventory_txns.c.item_id == item_id)
            .group_by(inventory_txns.c.warehouse_id, inventory_txns.c.location_id, inventory_txns.c.lot_no))
    if warehouse_id is not None:
        stmt = stmt.where(inventory_txns.c.warehouse_id == warehouse_id)
    out = []
    for r in tx.all(stmt):
        if r["qty"] > EPS:
            lot = tx.find(lots, item_id=item_id, lot_no=r["lot_no"]) if r["lot_no"] else None
            out.append({**r, "qty": q4(r["qty"]), "expiry": lot["expiry"] if lot else None})
    out.sort(key=lambda b: (b["expiry"] is None, b["expiry"] or "", b["lot_no"] or "", b["warehouse_id"],
                            b["location_id"] or ""))
    return out


def issue_fefo(tx: Tx, *, item_id: str, qty: float, kind: str, doc_type: str, doc_id: str,
               warehouse_id: str | None = None, doc_line: int | None = None) -> tuple[int, list[dict[str, Any]]]:
    """Take `qty` of an item out of stock first-expiry-first; returns (value taken in cents,
    the picks). Refuses `insufficient_stock` when the warehouse does not hold enough."""
    qty = q4(qty)
    picks: list[dict[str, Any]] = []
    remaining = qty
    for b in buckets(tx, item_id, warehouse_id):
        if remaining <= EPS:
            break
        take = q4(min(remaining, b["qty"]))
        picks.append({"warehouse_id": b["warehouse_id"], "location_id": b["location_id"],
                      "lot_no": b["lot_no"], "expiry": b["expiry"], "qty": take})
        remaining = q4(remaining - take)
    if remaining > EPS:
        have = balance(tx, item_id, warehouse_id)
        raise refused("insufficient_stock", f"Only {q4(have)} of {item_id} is on hand; {qty} is needed.",
                      item_id=item_id, on_hand=q4(have), needed=qty)
    total = 0
    for p in picks:
        total += -move(tx, item_id=item_id, warehouse_id=p["warehouse_id"], location_id=p["location_id"],
                       lot_no=p["lot_no"], qty=-p["qty"], kind=kind, doc_type=doc_type, doc_id=doc_id,
                       doc_line=doc_line)
    return total, picks


def on_hand_rows(tx: Tx, *, item_id: str | None = None, warehouse_id: str | None = None,
                 location_id: str | None = None, lot_no: str | None = None,
                 as_of: str | None = None) -> list[dict[str, Any]]:
    """Non-zero on-hand by item, warehouse, location and lot, with lot expiry and value."""
    stmt = (select(inventory_txns.c.item_id, inventory_txns.c.warehouse_id, inventory_txns.c.location_id,
                   inventory_txns.c.lot_no, func.sum(inventory_txns.c.qty).label("qty"),
                   func.sum(inventory_txns.c.value_cents).label("value_cents"))
            .group_by(inventory_txns.c.item_id, inventory_txns.c.warehouse_id, inventory_txns.c.location_id,
                      inventory_txns.c.lot_no)
            .order_by(inventory_txns.c.item_id, inventory_txns.c.warehouse_id, inventory_txns.c.location_id,
                      inventory_txns.c.lot_no))
    for col, val in ((inventory_txns.c.item_id, item_id), (inventory_txns.c.warehouse_id, warehouse_id),
                     (inventory_txns.c.location_id, location_id), (inventory_txns.c.lot_no, lot_no)):
        if val is not None:
            stmt = stmt.where(col == val)
    if as_of:
        stmt = stmt.where(inventory_txns.c.on_date <= as_of)
    out = []
    for r in tx.all(stmt):
        if abs(r["qty"]) < EPS and not r["value_cents"]:
            continue
        lot = tx.find(lots, item_id=r["item_id"], lot_no=r["lot_no"]) if r["lot_no"] else None
        out.append({"item_id": r["item_id"], "warehouse_id": r["warehouse_id"], "location_id": r["location_id"],
                    "lot_no": r["lot_no"], "expiry": lot["expiry"] if lot else None, "qty": q4(r["qty"]),
                    "value": from_cents(int(r["value_cents"] or 0))})
    return out


masterdata.register_on_hand(on_hand_rows)   # the item detail's on-hand by location
