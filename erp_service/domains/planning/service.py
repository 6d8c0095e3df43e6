"""MRP: the run (netting by low-level code) and releasing a suggestion as a PO or a work order."""
from __future__ import annotations

import datetime as dt
import math
from typing import Any

from sqlalchemy import select

from ...kernel.errors import invalid, refused
from ...kernel.money import q4
from ...kernel.schema import metadata
from ...kernel.tx import Tx
from ..inventory import EPS, balance
from ..manufacturing import WorkOrderIn, create_work_order, requirements, work_orders
from ..masterdata import MADE_TYPES, bom_lines, explode, items
from ..purchasing import service as ps
from ..purchasing.tables import po_lines, purchase_orders
from .schemas import MrpRunIn, ReleaseIn
from .tables import forecasts, mrp_runs, mrp_suggestions

#: A scheduled receipt due this many days or more before it is needed is a *defer* action
#: message; one due less early is not worth moving.
DEFER_DAYS = 14


def _add(day: str, n: int) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=n)).isoformat()


def low_level_codes(tx: Tx, on: str) -> dict[str, int]:
    """Deepest level at which each item appears in any BOM (0 = top)."""
    codes: dict[str, int] = {r["id"]: 0 for r in tx.all(select(items.c.id).where(items.c.active == 1))}

    def walk(item_id: str, level: int, path: tuple[str, ...]) -> None:
        if item_id in path or level > 20:
            return
        for line in bom_lines(tx, item_id, on):
            c = line["component_item"]
            if codes.get(c, -1) < level + 1:
                codes[c] = level + 1
            walk(c, level + 1, path + (item_id,))

    for item_id in sorted(codes):
        walk(item_id, codes[item_id], ())
    return codes


def _sales_demand(tx: Tx, item_id: str, end: str) -> list[tuple[str, float, str]]:
    so_lines = metadata.tables.get("so_lines")
    sales_orders = metadata.tables.get("sales_orders")
    if so_lines is None or sales_orders is None:
        return []
    rows = tx.all(select(so_lines.c.so_id, so_lines.c.qty, so_lines.c.qty_shipped, sales_orders.c.requested_date,
                         sales_orders.c.order_date)
                  .join(sales_orders, sales_orders.c.id == so_lines.c.so_id)
                  .where(so_lines.c.item_id == item_id, so_lines.c.status == "open",
                         sales_orders.c.status.not_in(("cancelled", "shipped", "invoiced")))
                  .order_by(so_lines.c.so_id, so_lines.c.line_no))
    out = []
    for r in rows:
        open_qty = q4(r["qty"] - (r["qty_shipped"] or 0))
        day = max(r["requested_date"] or r["order_date"], tx.business_date)
        if open_qty > EPS and day <= end:
            out.append((day, open_qty, f"sales_order:{r['so_id']}"))
    return out


def run_mrp(tx: Tx, body: MrpRunIn) -> dict[str, Any]:
    """Plan every active item; earlier open suggestions are superseded."""
    today = tx.business_date
    end = _add(today, body.horizon_weeks * 7)
    firm_until = _add(today, body.firm_days)
    run = tx.create_doc("mrp_run", mrp_runs, "MRP", "done", run_on=today, horizon_weeks=body.horizon_weeks,
                        firm_days=body.firm_days, horizon_end=end, suggestions=0)
    tx.conn.execute(mrp_suggestions.update().where(mrp_suggestions.c.status == "open")
                    .values(status="superseded", note=f"superseded by {run['id']}"))
    codes = low_level_codes(tx, today)
    dependent: dict[str, list[tuple[str, float, str]]] = {}
    # Components still to issue on open work orders.
    for wo in tx.all(select(work_orders).where(work_orders.c.status.in_(("planned", "released", "in_progress")))
                     .order_by(work_orders.c.id)):
        remaining = wo["qty"] - wo["qty_completed"]
        if remaining <= EPS:
            continue
        need_day = max(wo["start_date"] or wo["due_date"], today)
        for r in requirements(tx, wo):
            left = q4(r["required"] - r["issued"])
            if left > EPS:
                dependent.setdefault(r["item_id"], []).append((need_day, left, f"work_order:{wo['id']}"))
    count = 0
    order = sorted(codes, key=lambda i: (codes[i], i))
    for item_id in order:
        item = tx.get(items, item_id)
        if item["type"] == "phantom":
            continue
        # Forecast weeks that have started count from today; weeks that ended are history.
        demand = [(max(r["week_start"], today), r["qty"], "forecast")
                  for r in tx.all(select(forecasts).where(forecasts.c.item_id == item_id,
                                                          forecasts.c.week_start <= end,
                                                          forecasts.c.week_start >= _add(today, -6))
                                  .order_by(forecasts.c.week_start))]
        demand += _sales_demand(tx, item_id, end)
        demand += [d for d in dependent.get(item_id, []) if d[0] <= end]
        demand.sort()
        supplies = []   # [date, qty, kind, ref, used]
        for l in tx.all(select(po_lines, purchase_orders.c.need_by.label("po_need"))
                        .join(purchase_orders, purchase_orders.c.id == po_lines.c.po_id)
                        .where(po_lines.c.item_id == item_id, po_lines.c.status == "open",
                               purchase_orders.c.status.in_(("draft", "approved", "sent", "partially_received")))
                        .order_by(po_lines.c.po_id, po_lines.c.line_no)):
            open_qty = q4(l["qty"] - l["qty_received"])
            if open_qty > EPS:
                due = l["confirmed_date"] or l["need_by"] or l["po_need"] or today
                supplies.append({"date": max(due, today), "qty": open_qty, "po_id": l["po_id"],
                                 "po_line": l["line_no"], "used": False})
        for wo in tx.all(select(work_orders).where(work_orders.c.item_id == item_id,
                                                   work_orders.c.status.in_(("planned", "released", "in_progress")))
                         .order_by(work_orders.c.id)):
            left = q4(wo["qty"] - wo["qty_completed"])
            if left > EPS:
                supplies.append({"date": max(wo["due_date"], today), "qty": left, "wo_id": wo["id"], "used": False})
        supplies.sort(key=lambda s: (s["date"], s.get("po_id") or s.get("wo_id"), s.get("po_line") or 0))
        projected = balance(tx, item_id)
        safety = float(item["safety_stock"] or 0)
        # Supplies are taken when a shortage needs them, earliest first: one that is due long
        # before it is needed can be deferred, one due after it is needed is expedited.
        # Start with today: a balance already below safety stock is a shortage now.
        events = [(today, 0.0, "start")] + demand
        for day, qty, _src in events:
            projected -= qty
            while projected < safety - EPS:
                nxt = next((s for s in supplies if not s["used"]), None)
                if nxt is not None:
                    nxt["used"] = True
                    projected += nxt["qty"]
                    if nxt.get("po_id") and nxt["date"] > day:
                        count += _suggest(tx, run["id"], "expedite", item, nxt["qty"], day, day, firm_until,
                                          po_id=nxt["po_id"], po_line=nxt["po_line"], current_date=nxt["date"])
                    elif nxt.get("po_id") and nxt["date"] <= _add(day, -DEFER_DAYS):
                        count += _suggest(tx, run["id"], "defer", item, nxt["qty"], day, today, firm_until,
                                          po_id=nxt["po_id"], po_line=nxt["po_line"], current_date=nxt["date"])
                    continue
                need = safety - projected
                qty_order = _order_qty(item, need)
                made = item["type"] in MADE_TYPES
                ideal = _add(day, -int(item["lead_time_days"] or 0))
                release = max(ideal, today)
                note = f"late: the lead time needed release on {ideal}" if ideal < today else None
                count += _suggest(tx, run["id"], "planned_wo" if made else "planned_po", item, qty_order, day,
                                  release, firm_until, note=note)
                projected += qty_order
                if made:
                    for c in explode(tx, item_id, qty_order, release):
                        dependent.setdefault(c["item_id"], []).append((release, c["qty"], f"planned:{item_id}"))
        for s in supplies:
            if not s["used"] and s.get("po_id") and s["date"] <= end:
                count += _suggest(tx, run["id"], "cancel", item, s["qty"], s["date"], today, firm_until,
                                  po_id=s["po_id"], po_line=s["po_line"], current_date=s["date"])
    tx.update(mrp_runs, run["id"], suggestions=count)
    return run_view(tx, run["id"])


def _order_qty(item: dict[str, Any], need: float) -> float:
    qty = max(need, float(item["moq"] or 0))
    mult = float(item["order_multiple"] or 0)
    if mult > EPS:
        qty = math.ceil(round(qty / mult, 6)) * mult
    return q4(qty)


def _suggest(tx: Tx, run_id: str, kind: str, item: dict[str, Any], qty: float, due: str, release: str,
             firm_until: str, **extra: Any) -> int:
    vendor = item["preferred_vendor"] if kind == "planned_po" else None
    if kind in ("expedite", "defer", "cancel"):
        vendor = tx.scalar(select(purchase_orders.c.vendor_id).where(purchase_orders.c.id == extra["po_id"]))
    tx.insert(mrp_suggestions, id=tx.next_id("SUG"), run_id=run_id, kind=kind, item_id=item["id"], qty=q4(qty),
              due_date=due, release_date=release, vendor_id=vendor, firm=1 if release <= firm_until else 0,
              status="open", **extra)
    return 1


def run_view(tx: Tx, run_id: str) -> dict[str, Any]:
    """An MRP run with its history and suggestion counts by kind."""
    run = tx.get(mrp_runs, run_id, "mrp_run")
    by_kind: dict[str, int] = {}
    for s in tx.rows(mrp_suggestions, run_id=run_id):
        by_kind[s["kind"]] = by_kind.get(s["kind"], 0) + 1
    return {**{k: v for k, v in run.items() if k != "created_wall"}, "by_kind": by_kind,
            "history": tx.history("mrp_run", run_id), "links": {}}


def release_suggestion(tx: Tx, sug_id: str, body: ReleaseIn | None) -> dict[str, Any]:
    """planned_po → a PO created and sent to the vendor; planned_wo → a planned work order;
    expedite/defer/cancel → a vendor request for the PO line (at the suggestion's date)."""
    sug = tx.get(mrp_suggestions, sug_id, "mrp_suggestion")
    if sug["status"] != "open":
        raise refused("bad_status", f"Suggestion {sug_id} is {sug['status']}; only an open suggestion can be released.",
                      status=sug["status"])
    body = body or ReleaseIn()
    qty = q4(body.qty) if body.qty is not None else sug["qty"]
    due = body.due_date.isoformat() if body.due_date else sug["due_date"]
    tx.touch("mrp_suggestion", sug_id)
    if sug["kind"] == "planned_po":
        vendor = body.vendor_id or sug["vendor_id"]
        if not vendor:
            raise invalid(f"{sug['item_id']} has no preferred vendor; give vendor_id.")
        po = ps.create_po(tx, ps.PurchaseOrderIn(vendor_id=vendor, need_by=dt.date.fromisoformat(due),
                                                 note=f"Released from MRP suggestion {sug_id}",
                                                 lines=[ps.POLineIn(item_id=sug["item_id"], qty=qty)]),
                          source="mrp")
        ps.send_po(tx, po["id"])
        doc = po["id"]
    elif sug["kind"] == "planned_wo":
        wo = create_work_order(tx, WorkOrderIn(item_id=sug["item_id"], qty=qty,
                                               due_date=dt.date.fromisoformat(due),
                                               start_date=min(dt.date.fromisoformat(sug["release_date"]),
                                                              dt.date.fromisoformat(due)),
                                               note=f"Released from MRP suggestion {sug_id}"), source="mrp")
        doc = wo["id"]
    else:
        kind = sug["kind"]
        vr = ps.create_vendor_request(tx, ps.VendorRequestIn(
            kind=kind, po_id=sug["po_id"], po_line=sug["po_line"],
            requested_date=dt.date.fromisoformat(due) if kind in ("expedite", "defer") else None,
            reason="mrp", note=f"From MRP suggestion {sug_id}"))
        doc = vr["id"]
    tx.update(mrp_suggestions, sug_id, status="released", released_doc=doc, released_by=tx.actor.user_id,
              released_on=tx.business_date)
    return suggestion_out(tx.get(mrp_suggestions, sug_id))


def suggestion_out(row: dict[str, Any]) -> dict[str, Any]:
    """A suggestion as the API shows it."""
    return {**{k: v for k, v in row.items() if k != "created_wall"}, "firm": bool(row["firm"]),
            "late": bool(row["note"] and str(row["note"]).startswith("late:"))}
