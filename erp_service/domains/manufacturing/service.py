"""Work-order service functions: create, release, issue (and reverse), complete, close, cancel."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import func, select

from ...kernel.errors import invalid, refused
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from .. import ledger
from ..inventory import EPS, balance, check_location, issue_fefo, move, value_of
from ..masterdata import explode, get_item, is_made, lots, warehouses
from .schemas import CompleteIn, IssueIn, IssueLineIn, WoNoteIn, WorkOrderIn
from .tables import wip_txns, wo_completions, wo_issues, work_orders


def _wip(tx: Tx, wo_id: str, kind: str, ref: str | None, value: int) -> None:
    if value:
        tx.insert(wip_txns, wo_id=wo_id, on_date=tx.business_date, kind=kind, ref=ref, value_cents=value)


def wip_balance(tx: Tx, wo_id: str) -> int:
    """The WIP value sitting on one work order (cents)."""
    return int(tx.scalar(select(func.coalesce(func.sum(wip_txns.c.value_cents), 0)).where(wip_txns.c.wo_id == wo_id))
               or 0)


def create_work_order(tx: Tx, body: WorkOrderIn, *, source: str = "manual") -> dict[str, Any]:
    """A planned work order; the BOM in effect on the start (or due) date applies."""
    item = get_item(tx, body.item_id)
    if not is_made(item) or item["type"] == "phantom":
        raise invalid(f"{body.item_id} is a {item['type']}: work orders are for subassemblies and finished items.")
    wh = body.warehouse_id or item["default_warehouse"] or tx.scalar(select(warehouses.c.id).order_by(warehouses.c.id))
    if wh is None:
        raise invalid("No warehouse exists.")
    check_location(tx, wh, body.location_id)
    if body.start_date and body.start_date > body.due_date:
        raise invalid("start_date is after due_date.")
    bom_date = (body.start_date or body.due_date).isoformat()
    doc = tx.create_doc("work_order", work_orders, "WO", "planned", item_id=body.item_id, qty=q4(body.qty),
                        qty_completed=0.0, warehouse_id=wh, location_id=body.location_id,
                        start_date=body.start_date.isoformat() if body.start_date else None,
                        due_date=body.due_date.isoformat(), bom_date=bom_date, source=source, note=body.note)
    return wo_view(tx, doc["id"])


def requirements(tx: Tx, wo: dict[str, Any], units: float | None = None) -> list[dict[str, Any]]:
    """Components for `units` (default: the whole order), phantoms exploded, with what is
    already issued and what is on hand in the order's warehouse."""
    units = wo["qty"] if units is None else units
    issued: dict[str, float] = {}
    for i in tx.rows(wo_issues, wo_id=wo["id"], status="posted"):
        issued[i["item_id"]] = issued.get(i["item_id"], 0.0) + i["qty"]
    out = []
    for c in explode(tx, wo["item_id"], units, wo["bom_date"]):
        out.append({"item_id": c["item_id"], "required": c["qty"], "issued": q4(issued.get(c["item_id"], 0.0)),
                    "on_hand": q4(balance(tx, c["item_id"], wo["warehouse_id"]))})
    return out


def release_work_order(tx: Tx, wo_id: str) -> dict[str, Any]:
    """Release a planned order when every component is on hand for the whole quantity."""
    wo = tx.get(work_orders, wo_id, "work_order")
    if wo["status"] != "planned":
        raise refused("bad_status", f"work_order {wo_id} is {wo['status']}; only a planned order can be released.",
                      status=wo["status"])
    short = [r for r in requirements(tx, wo) if r["on_hand"] + EPS < r["required"] - r["issued"]]
    if short:
        names = ", ".join(f"{r['item_id']} (need {q4(r['required'] - r['issued'])}, have {r['on_hand']})" for r in short)
        raise refused("components_short", f"Work order {wo_id} cannot be released: short of {names}.",
                      short=[r["item_id"] for r in short])
    tx.set_status("work_order", work_orders, wo_id, "released", "components available", released_on=tx.business_date)
    return wo_view(tx, wo_id)


def issue_components(tx: Tx, wo_id: str, body: IssueIn) -> dict[str, Any]:
    """Issue components to a released or in-progress order: inventory → WIP."""
    wo = tx.get(work_orders, wo_id, "work_order")
    if wo["status"] not in ("released", "in_progress"):
        raise refused("not_released", f"Work order {wo_id} is {wo['status']}; components can be issued only to a "
                      f"released order.", status=wo["status"])
    if bool(body.lines) == (body.backflush_units is not None):
        raise invalid("Give either lines or backflush_units.")
    lines = [IssueLineIn(item_id=r["item_id"], qty=r["required"]) for r in
             requirements(tx, wo, float(body.backflush_units))] if body.backflush_units is not None else body.lines
    tx.touch("work_order", wo_id)
    total = 0
    for l in lines:
        get_item(tx, l.item_id)
        qty = q4(l.qty)
        if qty <= EPS:
            continue
        iid = tx.next_id("WOI")
        if l.location_id or l.lot_no:
            if l.location_id:
                check_location(tx, wo["warehouse_id"], l.location_id)
            v = -move(tx, item_id=l.item_id, warehouse_id=wo["warehouse_id"], location_id=l.location_id,
                      lot_no=l.lot_no, qty=-qty, kind="wo_issue", doc_type="wo_issue", doc_id=iid)
            picks = [{"warehouse_id": wo["warehouse_id"], "location_id": l.location_id, "lot_no": l.lot_no,
                      "qty": qty}]
        else:
            v, picks = issue_fefo(tx, item_id=l.item_id, qty=qty, kind="wo_issue", doc_type="wo_issue", doc_id=iid,
                                  warehouse_id=wo["warehouse_id"])
        tx.insert(wo_issues, id=iid, wo_id=wo_id, item_id=l.item_id, qty=qty, value_cents=v,
                  picks=json.dumps(picks, sort_keys=True), status="posted", on_date=tx.business_date,
                  by_user=tx.actor.user_id)
        _wip(tx, wo_id, "issue", iid, v)
        total += v
    ledger.post(tx, source="manufacturing", source_ref=wo_id, memo=f"Components issued to {wo_id}",
                lines=[ledger.Line("rule:wip", total, doc_ref=wo_id),
                       ledger.Line("rule:inventory", -total, party_type="item", doc_ref=wo_id)])
    if wo["status"] == "released":
        tx.set_status("work_order", work_orders, wo_id, "in_progress", "components issued")
    return wo_view(tx, wo_id)


def reverse_issue(tx: Tx, issue_id: str, body: WoNoteIn | None) -> dict[str, Any]:
    """Return an issue's components to the places they came from: WIP → inventory."""
    iss = tx.get(wo_issues, issue_id, "wo_issue")
    wo = tx.get(work_orders, iss["wo_id"], "work_order")
    if iss["status"] != "posted":
        raise refused("bad_status", f"Issue {issue_id} is {iss['status']}.", status=iss["status"])
    if wo["status"] not in ("released", "in_progress", "completed"):
        raise refused("bad_status", f"work_order {wo['id']} is {wo['status']}; its issues can no longer be reversed.",
                      status=wo["status"])
    tx.touch("work_order", wo["id"])
    picks = json.loads(iss["picks"])
    left = iss["value_cents"]
    for n, p in enumerate(picks):
        # The value goes back exactly as issued (the last pick takes any rounding remainder).
        v = left if n == len(picks) - 1 else value_of(tx, iss["item_id"], p["qty"])
        left -= v
        move(tx, item_id=iss["item_id"], warehouse_id=p["warehouse_id"], location_id=p["location_id"],
             lot_no=p["lot_no"], qty=p["qty"], kind="wo_issue_reversal", doc_type="wo_issue", doc_id=issue_id,
             value_cents=v)
    tx.conn.execute(wo_issues.update().where(wo_issues.c.id == issue_id).values(status="reversed",
                                                                                 reversed_on=tx.business_date))
    _wip(tx, wo["id"], "issue_reversal", issue_id, -iss["value_cents"])
    ledger.post(tx, source="manufacturing", source_ref=wo["id"], memo=f"Issue {issue_id} reversed",
                lines=[ledger.Line("rule:inventory", iss["value_cents"], party_type="item", doc_ref=wo["id"]),
                       ledger.Line("rule:wip", -iss["value_cents"], doc_ref=wo["id"])])
    return wo_view(tx, wo["id"])


def complete_work_order(tx: Tx, wo_id: str, body: CompleteIn) -> dict[str, Any]:
    """Report finished units: WIP → inventory at standard cost; no more than ordered."""
    wo = tx.get(work_orders, wo_id, "work_order")
    if wo["status"] not in ("released", "in_progress"):
        raise refused("not_released", f"Work order {wo_id} is {wo['status']}; only a released or in-progress order "
                      f"can report completions.", status=wo["status"])
    qty = q4(body.qty)
    if wo["qty_completed"] + qty > wo["qty"] + EPS:
        raise refused("over_completion", f"Work order {wo_id} is for {wo['qty']}; {wo['qty_completed']} are already "
                      f"complete, so {qty} more is too many.", ordered=wo["qty"], completed=wo["qty_completed"])
    item = get_item(tx, wo["item_id"])
    loc = body.location_id or wo["location_id"]
    check_location(tx, wo["warehouse_id"], loc)
    lot_no = body.lot_no
    if item["lot_controlled"]:
        lot_no = lot_no or f"{wo_id}-{tx.business_date.replace('-', '')}"
        if tx.find(lots, item_id=item["id"], lot_no=lot_no) is None:
            expiry = body.expiry.isoformat() if body.expiry else (
                (dt.date.fromisoformat(tx.business_date) + dt.timedelta(days=int(item["shelf_life_days"]))).isoformat()
                if item["shelf_life_days"] else None)
            tx.insert(lots, item_id=item["id"], lot_no=lot_no, expiry=expiry, first_received=tx.business_date)
    tx.touch("work_order", wo_id)
    value = value_of(tx, item["id"], qty)
    move(tx, item_id=item["id"], warehouse_id=wo["warehouse_id"], location_id=loc, lot_no=lot_no, qty=qty,
         kind="wo_completion", doc_type="work_order", doc_id=wo_id, value_cents=value)
    tx.insert(wo_completions, wo_id=wo_id, qty=qty, value_cents=value, location_id=loc, lot_no=lot_no,
              on_date=tx.business_date, by_user=tx.actor.user_id)
    _wip(tx, wo_id, "completion", None, -value)
    ledger.post(tx, source="manufacturing", source_ref=wo_id, memo=f"Completion of {qty} on {wo_id}",
                lines=[ledger.Line("rule:inventory", value, party_type="item", party_id=item["id"], doc_ref=wo_id),
                       ledger.Line("rule:wip", -value, doc_ref=wo_id)])
    done = q4(wo["qty_completed"] + qty)
    tx.update(work_orders, wo_id, qty_completed=done)
    if wo["status"] == "released":
        tx.set_status("work_order", work_orders, wo_id, "in_progress", "first completion")
    if done + EPS >= wo["qty"]:
        tx.set_status("work_order", work_orders, wo_id, "completed", "all units complete")
    return wo_view(tx, wo_id)


def close_work_order(tx: Tx, wo_id: str, body: WoNoteIn | None) -> dict[str, Any]:
    """Close a completed (or short-completed, in-progress) order: what is left in its WIP is
    the manufacturing variance."""
    wo = tx.get(work_orders, wo_id, "work_order")
    if wo["status"] == "in_progress" and wo["qty_completed"] <= EPS:
        raise refused("bad_status", f"Work order {wo_id} has no completions; reverse its issues and cancel it instead.")
    variance = wip_balance(tx, wo_id)
    tx.set_status("work_order", work_orders, wo_id, "closed", (body.note if body else None) or "closed",
                  allowed_from=["completed", "in_progress"], closed_on=tx.business_date, variance_cents=variance)
    _wip(tx, wo_id, "variance", None, -variance)
    ledger.post(tx, source="manufacturing", source_ref=wo_id, memo=f"Variance on closing {wo_id}",
                lines=[ledger.Line("rule:mfg_variance", variance, doc_ref=wo_id),
                       ledger.Line("rule:wip", -variance, doc_ref=wo_id)])
    return wo_view(tx, wo_id)


def cancel_work_order(tx: Tx, wo_id: str, body: WoNoteIn | None) -> dict[str, Any]:
    """Cancel an order with nothing issued or completed."""
    wo = tx.get(work_orders, wo_id, "work_order")
    if tx.rows(wo_issues, wo_id=wo_id, status="posted") or wo["qty_completed"] > EPS:
        raise refused("has_issues", f"Work order {wo_id} has issued components or completions; reverse the issues "
                      f"or close it instead.")
    tx.set_status("work_order", work_orders, wo_id, "cancelled", (body.note if body else None) or "cancelled",
                  allowed_from=["planned", "released"])
    return wo_view(tx, wo_id)


def wo_view(tx: Tx, wo_id: str) -> dict[str, Any]:
    """A work order with requirements, issues, completions, WIP, history and links."""
    wo = tx.get(work_orders, wo_id, "work_order")
    issues = tx.rows(wo_issues, wo_id=wo_id)
    return {**{k: v for k, v in wo.items() if k not in ("created_wall", "variance_cents")},
            "variance": from_cents(wo["variance_cents"]),
            "requirements": requirements(tx, wo),
            "issues": [{"id": i["id"], "item_id": i["item_id"], "qty": i["qty"], "value": from_cents(i["value_cents"]),
                        "status": i["status"], "on_date": i["on_date"], "picks": json.loads(i["picks"])}
                       for i in issues],
            "completions": [{"qty": c["qty"], "value": from_cents(c["value_cents"]), "location_id": c["location_id"],
                             "lot_no": c["lot_no"], "on_date": c["on_date"]}
                            for c in tx.rows(wo_completions, wo_id=wo_id)],
            "wip": from_cents(wip_balance(tx, wo_id)),
            "history": tx.history("work_order", wo_id),
            "links": {"wo_issue": [i["id"] for i in issues], "item": [wo["item_id"]]}}
