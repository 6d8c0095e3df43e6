"""Planning: demand forecasts, MRP runs and their suggestions, and releasing a suggestion into
a purchase order (created and sent) or a planned work order.

MRP nets, item by item in low-level-code order (parents before components, phantoms passed
through), gross requirements (forecasts, open sales-order lines, components of open and
planned work orders) against on-hand and scheduled receipts (open PO lines at their confirmed
or needed date, open work orders at their due date), keeping the item's safety stock. A
shortage first pulls in a later scheduled receipt (an *expedite* suggestion); otherwise it
becomes a planned order sized up to the MOQ and order multiple, released lead-time days
before it is needed. A scheduled receipt never needed in the horizon is a *cancel*
suggestion. Suggestions whose release date falls within `firm_days` are firm.
"""
from __future__ import annotations

import datetime as dt
import math
from typing import Any

from fastapi import Depends
from pydantic import BaseModel, Field
from sqlalchemy import Column, Float, Integer, String, Table, Text, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..http.lazy_routes import DomainRouter
from ..kernel.dates import IsoDate
from ..kernel.errors import invalid, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Quantity, q4
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from .inventory import EPS, balance
from .manufacturing import WorkOrderIn, create_work_order, requirements, work_orders
from .masterdata import MADE_TYPES, bom_lines, explode, items
from .purchasing import service as ps
from .purchasing.tables import po_lines, purchase_orders

forecasts = Table(
    "forecasts", metadata,
    Column("item_id", String, primary_key=True),
    Column("week_start", String, primary_key=True),     # Monday of the week
    Column("qty", Float, nullable=False),
)

mrp_runs = Table(
    "mrp_runs", metadata,
    *doc_columns(),                                       # status: done
    Column("run_on", String, nullable=False),
    Column("horizon_weeks", Integer, nullable=False),
    Column("firm_days", Integer, nullable=False),
    Column("horizon_end", String, nullable=False),
    Column("suggestions", Integer, nullable=False, default=0),
)

mrp_suggestions = Table(
    "mrp_suggestions", metadata,
    Column("id", String, primary_key=True),               # SUG-10001
    Column("run_id", String, nullable=False, index=True),
    Column("kind", String, nullable=False),               # planned_po | planned_wo | expedite | defer | cancel
    Column("item_id", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("due_date", String, nullable=False),
    Column("release_date", String, nullable=False),
    Column("vendor_id", String),
    Column("po_id", String),                              # expedite / defer / cancel: the order concerned
    Column("po_line", Integer),
    Column("wo_id", String),
    Column("current_date", String),                       # expedite: when the supply is due now
    Column("firm", Integer, nullable=False, default=0),
    Column("status", String, nullable=False),             # open | released | superseded
    Column("released_doc", String),
    Column("released_by", String),
    Column("released_on", String),
    Column("note", Text),                                 # "late: ..." when the lead time is already past
    Column("created_wall", String),
)

register_object("mrp_run", mrp_runs)
register_object("mrp_suggestion", mrp_suggestions)

SUGGESTION_KINDS = ("planned_po", "planned_wo", "expedite", "defer", "cancel")
#: A scheduled receipt due this many days or more before it is needed is a *defer* action
#: message; one due less early is not worth moving.
DEFER_DAYS = 14


class MrpRunIn(In):
    """Run MRP over a horizon."""

    horizon_weeks: int = Field(8, ge=1, le=52)
    firm_days: int = Field(5, ge=0, le=90)


class ReleaseIn(In):
    """Override a suggestion's quantity, date or vendor when releasing it."""

    qty: Quantity | None = Field(None, gt=0)
    due_date: IsoDate | None = None
    vendor_id: str | None = None


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


# Routes ----------------------------------------------------------------------------------------

class MrpRunOut(BaseModel):
    id: str
    status: str
    run_on: str
    horizon_weeks: int
    firm_days: int
    horizon_end: str
    suggestions: int
    created_by: str | None = None
    created_on: str
    by_kind: dict[str, int] = {}
    history: list[dict[str, Any]] = []
    links: dict[str, list[str]] = {}


class SuggestionOut(BaseModel):
    id: str
    run_id: str
    kind: str
    item_id: str
    qty: float
    due_date: str
    release_date: str
    vendor_id: str | None = None
    po_id: str | None = None
    po_line: int | None = None
    wo_id: str | None = None
    current_date: str | None = None
    firm: bool
    late: bool = False
    status: str
    released_doc: str | None = None
    released_by: str | None = None
    released_on: str | None = None
    note: str | None = None


class ForecastOut(BaseModel):
    item_id: str
    week_start: str
    qty: float


router = DomainRouter(tags=["planning"])


@router.post("/mrp/runs", operation_id="mrp.run", status_code=201, response_model=Envelope[MrpRunOut],
             summary="Run MRP (horizon_weeks default 8, firm_days default 5); earlier open suggestions are superseded")
def post_mrp_run(body: MrpRunIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: run_mrp(tx, body or MrpRunIn()))


@router.get("/mrp/runs", response_model=Envelope[Page[MrpRunOut]], summary="MRP runs, newest first")
def list_mrp_runs(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        listed = paginate(tx, select(mrp_runs.c.id).order_by(mrp_runs.c.id.desc()), page)
        listed["items"] = [run_view(tx, r["id"]) for r in listed["items"]]
        return listed
    return api.read(fn)


@router.get("/mrp/suggestions", response_model=Envelope[Page[SuggestionOut]],
            summary="Suggestions of a run (default: the latest; filters: kind, item_id, firm, status)")
def list_suggestions(run_id: str | None = None, kind: str | None = None, item_id: str | None = None,
                     firm: bool | None = None, status: str | None = None, page: PageRequest = Depends(page_params),
                     api: Api = Depends(read_api)):
    def fn(tx: Tx):
        rid = run_id or tx.scalar(select(mrp_runs.c.id).order_by(mrp_runs.c.id.desc()))
        return paginate(tx, select(mrp_suggestions).order_by(mrp_suggestions.c.id), page, render=suggestion_out,
                        run_id=rid or "", kind=kind, item_id=item_id,
                        firm=None if firm is None else int(firm), status=status)
    return api.read(fn)


@router.post("/mrp/suggestions/{sug_id}/release", operation_id="mrp.release", status_code=201,
             response_model=Envelope[SuggestionOut],
             summary="Release a suggestion: planned PO → created and sent PO; planned WO → planned work order; "
                     "expedite/defer/cancel → vendor request")
def post_release(sug_id: str, body: ReleaseIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_suggestion(tx, sug_id, body))


@router.get("/forecasts", response_model=Envelope[Page[ForecastOut]], summary="Demand forecasts by item and week")
def list_forecasts(item_id: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(forecasts).order_by(forecasts.c.item_id, forecasts.c.week_start),
                                        page, item_id=item_id))
