"""Twelve months of Northgate history, played through the API with the reference policies
(buyers order, receivers receive, AP enters and approves, the AP supervisor runs weekly
payments that the controller approves and the bank clears), with the clock advanced day by
day so the counterparties act. Every tie holds at the end because every posting came from a
real document."""
from __future__ import annotations

import datetime as dt
from typing import Any

from erp_service.domains.org import is_workday

from .api import InProcessErp
from .company import Northgate
from .people import CONTROLLER

BUYER, RECEIVER, AP_CLERK, AP_SUP = "ethan.wright", "luis.ortega", "riley.park", "hannah.brooks"

#: The counterparties during history: the controller approves runs the next day and releases them.
HISTORY_WORLD: dict[str, Any] = {
    "payment_run_approver": {"user": CONTROLLER, "approve_after_days": 1, "release": True},
    "vendor_default": {"silent": True},
}


def _days(first: str, last: str):
    d = dt.date.fromisoformat(first)
    end = dt.date.fromisoformat(last)
    while d <= end:
        yield d.isoformat()
        d += dt.timedelta(days=1)


def run_history(ng: Northgate, *, start: str, end: str, last_order: str | None = None,
                erp: InProcessErp | None = None) -> InProcessErp:
    """Play history from `start` (the database's date) to `end` inclusive; buyers place no
    orders after `last_order`."""
    erp = erp or InProcessErp(ng.builder, ng.tokens, HISTORY_WORLD)
    rng = ng.rng
    stock_items = [it for it in ng.catalog.items if it.preferred_vendor and it.type != "finished"]
    open_pos: list[tuple[str, str, str]] = []       # (receive_on, po_id, vendor)
    to_invoice: list[tuple[str, str, str]] = []     # (invoice_on, receipt_id, po_id)
    inv_no = {v.id: rng.randint(10000, 80000) for v in ng.vendors}
    for day in _days(start, end):
        if day != start:
            ng.builder.advance(day, erp.world)
        with ng.builder.db.transaction() as conn:
            working = is_workday(conn, day)
        if not working:
            continue
        weekday = dt.date.fromisoformat(day).weekday()
        # Buyers: a few purchase orders each Monday and Wednesday.
        if weekday in (0, 2) and (last_order is None or day <= last_order):
            for _ in range(rng.randint(1, 2)):
                item = rng.choice(stock_items)
                qty = max(item.moq, item.order_multiple * rng.randint(2, 10))
                while qty * item.standard_cost > 9000 and qty > item.order_multiple:
                    qty -= item.order_multiple  # stay inside the buyer's PO limit
                po = erp.post(BUYER, "/purchase-orders", {
                    "vendor_id": item.preferred_vendor, "warehouse_id": "WH-MAIN",
                    "lines": [{"item_id": item.id, "qty": qty, "unit_price": item.standard_cost}]})
                erp.post(BUYER, f"/purchase-orders/{po['id']}/send")
                lead = max(2, min(item.lead_time_days, 12))
                open_pos.append(((dt.date.fromisoformat(day) + dt.timedelta(days=lead)).isoformat(),
                                 po["id"], item.preferred_vendor))
        # Receiving: what is due arrives complete.
        for rec in [r for r in open_pos if r[0] <= day]:
            open_pos.remove(rec)
            po = erp.get(RECEIVER, f"/purchase-orders/{rec[1]}")
            lines = []
            for ln in po["lines"]:
                item = next(i for i in ng.catalog.items if i.id == ln["item_id"])
                entry = {"po_line": ln["line_no"], "qty_received": ln["qty"]}
                if item.lot_controlled:
                    entry["lot_no"] = f"L{day.replace('-', '')}{ln['line_no']}"
                    entry["expiry"] = (dt.date.fromisoformat(day) + dt.timedelta(days=item.shelf_life_days)).isoformat()
                lines.append(entry)
            receipt = erp.post(RECEIVER, "/receipts", {"po_id": rec[1], "warehouse_id": "WH-MAIN", "lines": lines})
            to_invoice.append(((dt.date.fromisoformat(day) + dt.timedelta(days=rng.randint(1, 4))).isoformat(),
                               receipt["id"], rec[1]))
        # AP: invoices arrive a few days after receipt; entered, validated, approved.
        for item in [r for r in to_invoice if r[0] <= day]:
            to_invoice.remove(item)
            po = erp.get(AP_CLERK, f"/purchase-orders/{item[2]}")
            inv_no[po["vendor_id"]] += 1
            inv = erp.post(AP_CLERK, "/ap-invoices", {
                "vendor": po["vendor_id"], "invoice_no": f"{inv_no[po['vendor_id']]}", "invoice_date": day,
                "po": po["id"], "lines": [{"kind": "item", "po_line": ln["line_no"], "item": ln["item_id"],
                                           "qty": ln["qty"], "unit_price": ln["unit_price"]} for ln in po["lines"]]})
            erp.post(AP_CLERK, f"/ap-invoices/{inv['id']}/validate")
            erp.post(AP_SUP, f"/ap-invoices/{inv['id']}/approve")
        # Fridays: pay everything due within the next week (discounts taken while open).
        if weekday == 4:
            horizon = (dt.date.fromisoformat(day) + dt.timedelta(days=7)).isoformat()
            listed = erp.get(AP_SUP, "/ap-invoices", status="approved", limit=1000)["items"]
            due = [inv["id"] for inv in listed
                   if inv["due_date"] <= horizon or (inv.get("discount_date") or "") >= day]
            if due:
                run = erp.post(AP_SUP, "/payment-runs", {"pay_date": day, "bank_account": "OPER"})
                for inv_id in due:
                    erp.post(AP_SUP, f"/payment-runs/{run['id']}/invoices", {"invoice": inv_id})
                erp.post(AP_SUP, f"/payment-runs/{run['id']}/submit")
    return erp
