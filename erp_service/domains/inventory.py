"""Inventory: every stock movement is a row of `inventory_txns`; on-hand is their sum, never
stored and never negative. Transfers and adjustments are documents; receipts, work orders and
shipments move stock through `move` / `issue_fefo` here.

Stock is valued at standard cost: each transaction carries the value it added to (or took
from) the inventory control account, so the `inventory` subledger is the sum of those values.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import Depends
from pydantic import BaseModel, Field
from sqlalchemy import Column, Float, Integer, String, Table, Text, func, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..http.lazy_routes import DomainRouter
from ..kernel.dates import IsoDate
from ..kernel.errors import invalid, not_found, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Quantity, from_cents, q4
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from . import ledger, masterdata
from .masterdata import OnHandRow as OnHandOut
from .masterdata import get_item, locations, lots, warehouses

EPS = 1e-9

inventory_txns = Table(
    "inventory_txns", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("on_date", String, nullable=False),
    Column("item_id", String, nullable=False, index=True),
    Column("warehouse_id", String, nullable=False),
    Column("location_id", String),
    Column("lot_no", String),
    Column("qty", Float, nullable=False),                 # signed
    Column("value_cents", Integer, nullable=False),       # signed, at standard cost
    Column("kind", String, nullable=False),               # receipt, receipt_reversal, transfer_out, ...
    Column("doc_type", String),
    Column("doc_id", String, index=True),
    Column("doc_line", Integer),
    Column("by_user", String),
)

transfers = Table(
    "transfers", metadata,
    *doc_columns(),                                        # status: posted
    Column("item_id", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("lot_no", String),
    Column("from_warehouse", String, nullable=False),
    Column("from_location", String),
    Column("to_warehouse", String, nullable=False),
    Column("to_location", String),
    Column("note", Text),
)

adjustments = Table(
    "adjustments", metadata,
    *doc_columns(),                                        # status: posted
    Column("item_id", String, nullable=False),
    Column("warehouse_id", String, nullable=False),
    Column("location_id", String),
    Column("lot_no", String),
    Column("qty", Float, nullable=False),                  # signed change
    Column("value_cents", Integer, nullable=False),
    Column("reason", String, nullable=False),
    Column("note", Text),
    Column("je_id", String),
)

register_object("transfer", transfers)
register_object("adjustment", adjustments)

ADJUST_REASONS = ("count", "damage", "expired", "found", "scrap", "quality", "other")


# Stock helpers used by every supply domain ---------------------------------------------------

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


def inventory_subledger(conn, as_of: str | None) -> int:
    """Value of stock on hand at standard cost (debit positive), from the transactions."""
    stmt = select(func.coalesce(func.sum(inventory_txns.c.value_cents), 0))
    if as_of:
        stmt = stmt.where(inventory_txns.c.on_date <= as_of)
    return int(conn.execute(stmt).scalar() or 0)


ledger.register_subledger("inventory", inventory_subledger)


# Transfers and adjustments --------------------------------------------------------------------

class TransferIn(In):
    """Move stock between locations or warehouses."""

    item_id: str
    qty: Quantity = Field(gt=0)
    from_warehouse: str
    from_location: str | None = None
    to_warehouse: str
    to_location: str | None = None
    lot_no: str | None = None
    note: str | None = Field(None, max_length=2000)


class AdjustmentIn(In):
    """Correct on-hand after a count, damage or expiry (qty is the signed change)."""

    item_id: str
    warehouse_id: str
    location_id: str | None = None
    lot_no: str | None = None
    qty: Quantity
    reason: str = Field(description="count | damage | expired | found | scrap | quality | other")
    note: str | None = Field(None, max_length=2000)
    expiry: str | None = Field(None, description="Expiry of a new lot found in a count (YYYY-MM-DD)")


def create_transfer(tx: Tx, body: TransferIn) -> dict[str, Any]:
    """Move stock; value moves with it, so no ledger entry is needed."""
    get_item(tx, body.item_id)
    check_location(tx, body.from_warehouse, body.from_location)
    check_location(tx, body.to_warehouse, body.to_location)
    if (body.from_warehouse, body.from_location) == (body.to_warehouse, body.to_location):
        raise invalid("The transfer's source and destination are the same.")
    qty = q4(body.qty)
    doc = tx.create_doc("transfer", transfers, "TRF", "posted", item_id=body.item_id, qty=qty,
                        lot_no=body.lot_no, from_warehouse=body.from_warehouse, from_location=body.from_location,
                        to_warehouse=body.to_warehouse, to_location=body.to_location, note=body.note)
    v = move(tx, item_id=body.item_id, warehouse_id=body.from_warehouse, location_id=body.from_location,
             lot_no=body.lot_no, qty=-qty, kind="transfer_out", doc_type="transfer", doc_id=doc["id"])
    move(tx, item_id=body.item_id, warehouse_id=body.to_warehouse, location_id=body.to_location,
         lot_no=body.lot_no, qty=qty, kind="transfer_in", doc_type="transfer", doc_id=doc["id"], value_cents=-v)
    return transfer_view(tx, doc["id"])


def create_adjustment(tx: Tx, body: AdjustmentIn) -> dict[str, Any]:
    """Change on-hand and post the value to the inventory adjustment account."""
    item = get_item(tx, body.item_id)
    check_location(tx, body.warehouse_id, body.location_id)
    if body.reason not in ADJUST_REASONS:
        raise invalid(f"reason must be one of {', '.join(ADJUST_REASONS)}.")
    qty = q4(body.qty)
    if abs(qty) < EPS:
        raise invalid("qty must not be zero.")
    if item["lot_controlled"] and not body.lot_no:
        raise invalid(f"{body.item_id} is lot-controlled: give lot_no.")
    if body.lot_no and tx.find(lots, item_id=body.item_id, lot_no=body.lot_no) is None:
        if qty < 0:
            raise not_found("lot", f"{body.item_id}/{body.lot_no}")
        tx.insert(lots, item_id=body.item_id, lot_no=body.lot_no, expiry=body.expiry,
                  first_received=tx.business_date)
    value = value_of(tx, body.item_id, qty)
    doc = tx.create_doc("adjustment", adjustments, "ADJ", "posted", item_id=body.item_id,
                        warehouse_id=body.warehouse_id, location_id=body.location_id, lot_no=body.lot_no,
                        qty=qty, value_cents=value, reason=body.reason, note=body.note)
    move(tx, item_id=body.item_id, warehouse_id=body.warehouse_id, location_id=body.location_id,
         lot_no=body.lot_no, qty=qty, kind="adjustment", doc_type="adjustment", doc_id=doc["id"], value_cents=value)
    je = ledger.post(tx, source="inventory", source_ref=doc["id"], memo=f"Inventory adjustment {doc['id']} ({body.reason})",
                     lines=[ledger.Line("rule:inventory", value, party_type="item", party_id=body.item_id,
                                        doc_ref=doc["id"]),
                            ledger.Line("rule:inventory_adjustment", -value, doc_ref=doc["id"])])
    tx.update(adjustments, doc["id"], je_id=je or None)
    return adjustment_view(tx, doc["id"])


def transfer_view(tx: Tx, doc_id: str) -> dict[str, Any]:
    """A transfer with its history."""
    row = tx.get(transfers, doc_id, "transfer")
    return {**row, "history": tx.history("transfer", doc_id), "links": {}}


def adjustment_view(tx: Tx, doc_id: str) -> dict[str, Any]:
    """An adjustment with its value, history and journal link."""
    row = tx.get(adjustments, doc_id, "adjustment")
    out = {k: v for k, v in row.items() if k != "value_cents"}
    return {**out, "value": from_cents(row["value_cents"]), "history": tx.history("adjustment", doc_id),
            "links": {"journal_entry": [row["je_id"]] if row["je_id"] else []}}


# Routes --------------------------------------------------------------------------------------

class TransferOut(BaseModel):
    id: str
    status: str
    item_id: str
    qty: float
    lot_no: str | None = None
    from_warehouse: str
    from_location: str | None = None
    to_warehouse: str
    to_location: str | None = None
    note: str | None = None
    created_by: str | None = None
    created_on: str
    history: list[dict[str, Any]] = []
    links: dict[str, list[str]] = {}


class AdjustmentOut(BaseModel):
    id: str
    status: str
    item_id: str
    warehouse_id: str
    location_id: str | None = None
    lot_no: str | None = None
    qty: float
    value: float
    reason: str
    note: str | None = None
    je_id: str | None = None
    created_by: str | None = None
    created_on: str
    history: list[dict[str, Any]] = []
    links: dict[str, list[str]] = {}


class InvTxnOut(BaseModel):
    id: int
    on_date: str
    item_id: str
    warehouse_id: str
    location_id: str | None = None
    lot_no: str | None = None
    qty: float
    value: float
    kind: str
    doc_type: str | None = None
    doc_id: str | None = None
    doc_line: int | None = None
    by_user: str | None = None


router = DomainRouter(tags=["inventory"])


@router.get("/inventory/on-hand", response_model=Envelope[Page[OnHandOut]],
            summary="Stock on hand by item, warehouse, location and lot (derived from transactions)")
def get_on_hand(item_id: str | None = None, warehouse_id: str | None = None, location_id: str | None = None,
                lot_no: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        rows = [r for r in on_hand_rows(tx, item_id=item_id, warehouse_id=warehouse_id, location_id=location_id,
                                        lot_no=lot_no) if abs(r["qty"]) > EPS]
        return {"items": rows[page.offset:page.offset + page.limit], "total": len(rows),
                "offset": page.offset, "limit": page.limit}
    return api.read(fn)


@router.get("/inventory/transactions", response_model=Envelope[Page[InvTxnOut]],
            summary="Stock movements (filters: item_id, warehouse_id, kind, doc_id)")
def list_txns(item_id: str | None = None, warehouse_id: str | None = None, kind: str | None = None,
              doc_id: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def render(r):
        return {**{k: v for k, v in r.items() if k != "value_cents"}, "value": from_cents(r["value_cents"])}
    return api.read(lambda tx: paginate(tx, select(inventory_txns).order_by(inventory_txns.c.id), page,
                                        render=render, item_id=item_id, warehouse_id=warehouse_id, kind=kind,
                                        doc_id=doc_id))


@router.post("/inventory/transfers", operation_id="inv.transfer", status_code=201,
             response_model=Envelope[TransferOut], summary="Move stock between locations or warehouses")
def post_transfer(body: TransferIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_transfer(tx, body))


@router.get("/inventory/transfers", response_model=Envelope[Page[TransferOut]], summary="List transfers")
def list_transfers(item_id: str | None = None, page: PageRequest = Depends(page_params),
                   api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(transfers).order_by(transfers.c.id), page, item_id=item_id))


@router.post("/inventory/adjustments", operation_id="inv.adjust", status_code=201,
             response_model=Envelope[AdjustmentOut],
             summary="Adjust on-hand (signed qty) with a reason; posts to inventory adjustments")
def post_adjustment(body: AdjustmentIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_adjustment(tx, body))


@router.get("/inventory/adjustments", response_model=Envelope[Page[AdjustmentOut]], summary="List adjustments")
def list_adjustments(item_id: str | None = None, reason: str | None = None,
                     page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def render(r):
        return {**{k: v for k, v in r.items() if k != "value_cents"}, "value": from_cents(r["value_cents"])}
    return api.read(lambda tx: paginate(tx, select(adjustments).order_by(adjustments.c.id), page, render=render,
                                        item_id=item_id, reason=reason))


masterdata.register_on_hand(on_hand_rows)   # the item detail's on-hand by location


# Reports -----------------------------------------------------------------------------------------

from .reports import AsOfParams, ReportParams, as_of_of, register_report  # noqa: E402

#: Inventory transaction kinds that consume stock (usage): issues to work orders and shipments.
USAGE_KINDS = ("wo_issue", "wo_issue_reversal", "shipment", "shipment_reversal")


class OnHandParams(AsOfParams):
    item_id: str | None = None
    warehouse_id: str | None = None


class UsageParams(ReportParams):
    as_of: IsoDate | None = None
    months: int = Field(6, ge=1, le=24)
    item_id: str | None = None


def on_hand_report(tx: Tx, params: OnHandParams) -> dict[str, Any]:
    """Stock by item, warehouse, location and lot as of a date, with value at standard cost."""
    as_of = as_of_of(tx, params)
    rows = [r for r in on_hand_rows(tx, item_id=params.item_id, warehouse_id=params.warehouse_id, as_of=as_of)
            if abs(r["qty"]) > EPS]
    for r in rows:
        r["expired"] = bool(r["expiry"] and r["expiry"] < as_of)
    return {"as_of": as_of, "rows": rows, "total_value": round(sum(r["value"] for r in rows), 2)}


def item_usage_report(tx: Tx, params: UsageParams) -> dict[str, Any]:
    """Average monthly usage (issues to work orders and shipments, net of reversals) over the
    last `months` months before `as_of`, with on-hand and months of cover."""
    as_of = params.as_of.isoformat() if params.as_of else tx.business_date
    start = (dt.date.fromisoformat(as_of) - dt.timedelta(days=round(params.months * 365 / 12))).isoformat()
    stmt = (select(inventory_txns.c.item_id, func.sum(inventory_txns.c.qty).label("qty"))
            .where(inventory_txns.c.kind.in_(USAGE_KINDS), inventory_txns.c.on_date > start,
                   inventory_txns.c.on_date <= as_of)
            .group_by(inventory_txns.c.item_id).order_by(inventory_txns.c.item_id))
    if params.item_id:
        stmt = stmt.where(inventory_txns.c.item_id == params.item_id)
    rows = []
    for r in tx.all(stmt):
        used = q4(-r["qty"])
        avg = q4(used / params.months)
        oh = q4(balance(tx, r["item_id"]))
        rows.append({"item_id": r["item_id"], "used": used, "avg_monthly_usage": avg, "on_hand": oh,
                     "months_of_cover": q4(oh / avg) if avg > EPS else None})
    return {"as_of": as_of, "from": start, "months": params.months, "rows": rows}


register_report("on-hand", on_hand_report, OnHandParams, title="Stock on hand")
register_report("item-usage", item_usage_report, UsageParams, title="Average monthly item usage")
