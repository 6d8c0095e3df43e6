"""Procure to pay during history: the buyer's weekly review (one PO per vendor, approval by the
purchasing manager above the buyer's limit), receipts as goods arrive (now and then in two
parts), vendor invoices entered, validated and approved, and a payment run every fourth Friday
for what falls due before the next one (discounts taken while open)."""
from __future__ import annotations

import datetime as dt
import math

from .history import AP_CLERK, AP_SUP, BUYER, PUR_MGR, RECEIVER, History, add_days
from .people import CONTROLLER

#: Weeks of usage a replenishment order covers beyond the reorder point.
COVER_WEEKS = 20
#: Items within this many weeks of their reorder point ride along on their vendor's PO.
TOP_UP_WEEKS = 8
#: A PO above this (cents) is split: the purchasing manager approves up to 100,000 and the
#: controller approves invoices up to 100,000.
PO_CAP_CENTS = 9_500_000
BUYER_LIMIT_CENTS = 1_000_000
AP_SUP_LIMIT_CENTS = 2_500_000
#: A payment run pays what falls due within this many days of its pay date.
RUN_HORIZON_DAYS = 28
RUN_EVERY_DAYS = 28
#: The controller approves payment runs up to 250,000.
RUN_CAP_CENTS = 24_000_000


def plan_runs(h: History) -> None:
    """Payment runs every fourth Friday, counted back from the last Friday of history, so the
    last run before the scenario starts pays everything due within four weeks of it."""
    end = dt.date.fromisoformat(h.end)
    last = end - dt.timedelta(days=(end.weekday() - 4) % 7)
    runs, d = set(), last
    while d.isoformat() >= h.start:
        runs.add(d.isoformat())
        d -= dt.timedelta(days=RUN_EVERY_DAYS)
    h.notes.update(run_days=runs, arrivals=[], bills=[], approved={}, inv_no={}, po_lines={})


def _round_up(qty: float, multiple: float, moq: float) -> float:
    step = multiple or 1
    return max(moq or 0, math.ceil(qty / step) * step)


def buy(h: History) -> None:
    """Monday review (and the first day): order what has fallen below its reorder point."""
    if h.last_order is not None and h.today > h.last_order:
        return
    if h.today != h.workdays[0] and (h.weekday() != 0 or _week(h) % 2):
        return
    final = h.last_order is not None and add_days(h.today, 7) > h.last_order
    weeks_left = (dt.date.fromisoformat(h.end) - dt.date.fromisoformat(h.today)).days / 7
    stock, rng = h.stock, h.rng
    committed = _committed(h)
    by_vendor: dict[str, list[dict]] = {}
    wanted: dict[str, list[tuple]] = {}
    for item in stock.items.values():
        usage = stock.weekly.get(item.id, 0.0)
        if not item.preferred_vendor or usage <= 0:
            continue
        lead_weeks = math.ceil(item.lead_time_days / 5)
        rop = usage * (lead_weeks + 3)      # reviewed every other week
        target = rop + usage * (max(COVER_WEEKS, weeks_left + 2) if final else COVER_WEEKS)
        position = stock.position(item.id) - committed.get(item.id, 0.0)
        wanted.setdefault(item.preferred_vendor, []).append((item, position, rop, target, usage))
    for vendor, rows in sorted(wanted.items()):
        # A vendor gets a PO when one of its items is below its reorder point (or before the
        # purchasing freeze); the PO then tops up every item of the vendor that is close to it.
        if not final and not any(pos < rop for _, pos, rop, _, _ in rows):
            continue
        for item, position, rop, target, usage in rows:
            if position >= target or (not final and position >= rop + usage * TOP_UP_WEEKS):
                continue
            qty = _round_up(target - position, item.order_multiple, item.moq)
            if qty * item.standard_cost > 90_000:        # inside the purchasing manager's PO limit
                qty = max(item.moq, (90_000 // item.standard_cost) // (item.order_multiple or 1)
                          * (item.order_multiple or 1))
            price = round(item.standard_cost * rng.uniform(0.97, 1.05), 2)
            by_vendor.setdefault(vendor, []).append({"item_id": item.id, "qty": qty, "unit_price": price})
    for vendor, lines in sorted(by_vendor.items()):
        batch: list[dict] = []
        total = 0
        for ln in lines + [None]:
            cents = 0 if ln is None else round(ln["qty"] * ln["unit_price"] * 100)
            if batch and (ln is None or total + cents > PO_CAP_CENTS):
                _place(h, vendor, batch, total)
                batch, total = [], 0
            if ln is not None:
                batch.append(ln)
                total += cents


def _week(h: History) -> int:
    return (dt.date.fromisoformat(h.today) - dt.date.fromisoformat(h.start)).days // 7


def _committed(h: History) -> dict[str, float]:
    """What planned work orders and the open order backlog will take from stock."""
    out: dict[str, float] = {}
    for w in h.notes.get("work_orders", {}).values():
        if w["state"] == "planned":
            for comp, q in h.stock.explode(w["item"], w["qty"]).items():
                out[comp] = out.get(comp, 0.0) + q
    for o in h.notes.get("open_orders", {}).values():
        for item_id, q in o["lines"].values():
            out[item_id] = out.get(item_id, 0.0) + q
    return out


def _place(h: History, vendor: str, lines: list[dict], total_cents: int) -> None:
    po = h.call(BUYER, "POST", "/purchase-orders", {"vendor_id": vendor, "warehouse_id": "WH-MAIN", "lines": lines})
    if total_cents > BUYER_LIMIT_CENTS:
        h.call(PUR_MGR, "POST", f"/purchase-orders/{po['id']}/approve", {"note": "Replenishment per reorder review"})
    h.call(BUYER, "POST", f"/purchase-orders/{po['id']}/send")
    lead = max(h.stock.items[ln["item_id"]].lead_time_days for ln in lines)
    for ln in po["lines"]:
        h.stock.on_order[ln["item_id"]] += ln["qty"]
    h.notes["arrivals"].append((add_days(h.today, lead), po["id"], vendor,
                                [(ln["line_no"], ln["item_id"], ln["qty"], ln["unit_price"]) for ln in po["lines"]]))


def receive(h: History) -> None:
    """Post receipts for what arrives today (lots and expiry for lot-controlled items); about
    one delivery in twenty-five comes short with the rest following a few days later."""
    keep = []
    for arrival in h.notes["arrivals"]:
        day, po_id, vendor, lines = arrival
        if day > h.today:
            keep.append(arrival)
            continue
        rng = h.rng
        now, later = [], []
        short_line = rng.randrange(len(lines)) if rng.random() < 0.04 else -1
        for n, (line_no, item_id, qty, price) in enumerate(lines):
            if n == short_line and qty >= 50:
                part = round(qty * rng.choice([0.6, 0.75, 0.9]) / 5) * 5
                now.append((line_no, item_id, part, price))
                later.append((line_no, item_id, round(qty - part, 4), price))
            else:
                now.append((line_no, item_id, qty, price))
        body_lines = []
        for line_no, item_id, qty, _ in now:
            item = h.stock.items[item_id]
            entry = {"po_line": line_no, "qty_received": qty}
            if item.lot_controlled:
                entry["lot_no"] = f"L{h.today[2:].replace('-', '')}{line_no}{po_id[-3:]}"
                entry["expiry"] = add_days(h.today, item.shelf_life_days)
            body_lines.append(entry)
        slip = f"PS-{vendor[2:]}-{rng.randint(10000, 99999)}"
        receipt = h.call(RECEIVER, "POST", "/receipts", {"po_id": po_id, "warehouse_id": "WH-MAIN",
                                                         "packing_slip": slip, "lines": body_lines})
        for _, item_id, qty, _ in now:
            h.stock.add(item_id, qty)
            h.stock.on_order[item_id] = round(h.stock.on_order[item_id] - qty, 4)
        if later:
            keep.append((add_days(h.today, rng.choice([3, 4, 6])), po_id, vendor, later))
        h.notes["bills"].append((add_days(h.today, rng.randint(1, 4)), h.today, po_id, vendor, now, receipt["id"]))
    h.notes["arrivals"] = keep


def invoice_no(h: History, vendor: str) -> str:
    """The vendor's next invoice number (each vendor numbers its own, with gaps)."""
    n = h.notes["inv_no"].get(vendor) or h.rng.randint(10000, 80000)
    h.notes["inv_no"][vendor] = n + h.rng.randint(1, 40)
    return str(n)


def enter_and_approve(h: History, body: dict) -> dict:
    """Enter, validate and approve one vendor invoice (the controller above the supervisor's
    limit); remember it for the payment runs."""
    inv = h.call(AP_CLERK, "POST", "/ap-invoices", body)
    h.call(AP_CLERK, "POST", f"/ap-invoices/{inv['id']}/validate")
    approver = AP_SUP if round(inv["total"] * 100) <= AP_SUP_LIMIT_CENTS else CONTROLLER
    out = h.call(approver, "POST", f"/ap-invoices/{inv['id']}/approve")
    h.notes["approved"][inv["id"]] = (out["due_date"], out.get("discount_date"), round(out["total"] * 100))
    return out


def bill(h: History) -> None:
    """Vendor invoices that arrived today, billed at the PO price for what was received;
    castings and bar stock carry a freight line."""
    keep = []
    for b in h.notes["bills"]:
        due, received_on, po_id, vendor, lines, _ = b
        if due > h.today:
            keep.append(b)
            continue
        inv_lines = [{"kind": "item", "po_line": n, "item": i, "qty": q, "unit_price": p} for n, i, q, p in lines]
        if vendor in ("V-0101", "V-0103"):
            inv_lines.append({"kind": "freight", "description": "Freight", "amount": round(h.rng.uniform(85, 340), 2)})
        enter_and_approve(h, {"vendor": vendor, "invoice_no": invoice_no(h, vendor), "invoice_date": received_on,
                              "po": po_id, "lines": inv_lines})
    h.notes["bills"] = keep


def pay(h: History) -> None:
    """On a run day: pay every approved invoice due within the horizon or with its discount
    still open; the controller (a counterparty during history) approves and releases it."""
    if h.today not in h.notes["run_days"]:
        return
    horizon = add_days(h.today, RUN_HORIZON_DAYS)
    approved = h.notes["approved"]
    due = [i for i, (d, disc, _) in sorted(approved.items()) if d <= horizon or (disc or "") >= h.today]
    if not due:
        return
    batches: list[list[str]] = [[]]
    total = 0
    for inv_id in due:                # runs stay inside the controller's payment-run limit
        cents = approved[inv_id][2]
        if batches[-1] and total + cents > RUN_CAP_CENTS:
            batches.append([])
            total = 0
        batches[-1].append(inv_id)
        total += cents
    for batch in batches:
        run = h.call(AP_SUP, "POST", "/payment-runs", {"pay_date": h.today, "bank_account": "OPER",
                                                        "memo": f"Payment run {h.today}"})
        for inv_id in batch:
            h.call(AP_SUP, "POST", f"/payment-runs/{run['id']}/invoices", {"invoice": inv_id})
            del approved[inv_id]
        h.call(AP_SUP, "POST", f"/payment-runs/{run['id']}/submit")
