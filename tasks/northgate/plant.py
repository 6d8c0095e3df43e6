"""The plant during history: on Mondays the planner opens work orders for valves whose stock
(plus what is in production, less the open order backlog) falls below three weeks of demand,
and for the trim subassemblies they need; the supervisor releases an order when its components
are on hand, backflushes them, reports the finished units a couple of workdays later and
closes the order the next workday (any WIP left is the manufacturing variance)."""
from __future__ import annotations

import math

from .history import PLANNER, PROD_SUP, History, add_days
from .supply import _committed

REORDER_WEEKS, BATCH_WEEKS = 3, 26
DAYS_TO_COMPLETE = {"subassembly": 1, "finished": 2}


def _backlog(h: History, item_id: str) -> float:
    return sum(q for o in h.notes["open_orders"].values() for i, q in o["lines"].values() if i == item_id)


def plan(h: History) -> None:
    """Monday: work orders for valves below their reorder point, trims first."""
    stock = h.stock
    wos = h.notes.setdefault("work_orders", {})
    in_work = lambda item: sum(w["qty"] for w in wos.values() if w["item"] == item and w["state"] in ("planned", "issued"))  # noqa: E731
    for item in [i for i in stock.items.values() if i.type == "finished"]:
        usage = stock.weekly.get(item.id, 0.0)
        if usage <= 0:
            continue
        projected = stock.on_hand[item.id] + in_work(item.id) - _backlog(h, item.id)
        if projected >= usage * REORDER_WEEKS:
            continue
        qty = max(150, math.ceil((usage * (BATCH_WEEKS + REORDER_WEEKS) - projected) / 25) * 25)
        trim = next(c for c in stock.explode(item.id, 1) if stock.items[c].type == "subassembly")
        committed = sum(stock.explode(w["item"], w["qty"]).get(trim, 0.0) for w in wos.values()
                        if w["state"] == "planned" and stock.items[w["item"]].type == "finished")
        trim_free = stock.on_hand[trim] + in_work(trim) - committed
        # No bigger a batch than the purchased parts on hand or on order will cover.
        trims_possible = _buildable(h, trim, 0) + max(trim_free, 0)
        qty = min(qty, _buildable(h, item.id, trims_possible))
        qty = math.floor(qty / 25) * 25
        if qty < 50:
            continue
        short = stock.explode(item.id, qty)[trim] - trim_free
        if short > 0:
            _open(h, trim, max(math.ceil(short / 50) * 50, min(math.ceil(1.5 * short / 50) * 50, _buildable(h, trim, 0))), 2)
        _open(h, item.id, qty, 6)


def _buildable(h: History, item_id: str, made_free: float) -> float:
    """Units of `item_id` its purchased components (on hand or on order, less what planned work
    orders will take) cover; made components count as `made_free`."""
    stock = h.stock
    committed = _committed(h)
    per = stock.explode(item_id, 1)
    best = float("inf")
    for comp, q in per.items():
        free = made_free if stock.items[comp].type == "subassembly" else \
            stock.position(comp) - committed.get(comp, 0.0)
        best = min(best, max(free, 0.0) / q)
    return math.floor(best / 50) * 50 if best != float("inf") else 0


def _open(h: History, item_id: str, qty: float, days: int) -> None:
    wo = h.call(PLANNER, "POST", "/work-orders", {"item_id": item_id, "qty": qty, "start_date": h.today,
                                                  "due_date": add_days(h.today, days), "warehouse_id": "WH-MAIN"})
    h.notes["work_orders"][wo["id"]] = {"item": item_id, "qty": qty, "state": "planned", "since": h.today}


def run_plant(h: History) -> None:
    """Plan on Mondays, then move every open work order one step when it can."""
    if h.weekday() == 0:
        plan(h)
    stock = h.stock
    for wo_id, w in sorted(h.notes.get("work_orders", {}).items()):
        kind = stock.items[w["item"]].type
        if w["state"] == "planned":
            needs = stock.explode(w["item"], w["qty"])
            if not stock.covers(needs):
                continue
            h.call(PROD_SUP, "POST", f"/work-orders/{wo_id}/release")
            h.call(PROD_SUP, "POST", f"/work-orders/{wo_id}/issue", {"backflush_units": w["qty"]})
            for comp, q in needs.items():
                stock.take(comp, q)
            w.update(state="issued", since=h.today)
        elif w["state"] == "issued" and h.workdays_since(w["since"]) >= DAYS_TO_COMPLETE[kind]:
            h.call(PROD_SUP, "POST", f"/work-orders/{wo_id}/complete", {"qty": w["qty"]})
            stock.add(w["item"], w["qty"])
            w.update(state="completed", since=h.today)
        elif w["state"] == "completed" and h.workdays_since(w["since"]) >= 1:
            h.call(PROD_SUP, "POST", f"/work-orders/{wo_id}/close", {"note": "Production complete"})
            w.update(state="done")
