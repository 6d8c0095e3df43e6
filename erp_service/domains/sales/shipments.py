"""Shipments: picked first-expiry-first, never beyond the open quantity or the stock; each
posts COGS / inventory at standard cost."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from ...kernel.errors import invalid, not_found, refused
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from .. import ledger
from ..inventory import inventory_txns, issue_fefo
from .schemas import ShipmentIn
from .tables import EPS, SHIPPABLE, sales_orders, shipment_lines, shipments, so_lines


def create_shipment(tx: Tx, body: ShipmentIn) -> dict[str, Any]:
    """Ship open quantities of a released order, first-expiry-first; posts COGS / inventory."""
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
