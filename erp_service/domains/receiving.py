"""Receiving: receipts against sent purchase orders (lots and expiry for lot-controlled items,
refusals with reasons, substitutions, locations), their reversal, and the GRNI subledger.

Posting a receipt puts the received stock into inventory at standard cost and owes the vendor
the PO price in GRNI (goods received, not invoiced); the difference is purchase price
variance. The payables domain relieves GRNI when it validates an invoice against a PO line
(`payables.grni_cleared_cents`), so the GRNI subledger is: value received − value reversed −
value cleared by invoices.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from fastapi import Depends
from pydantic import BaseModel, Field
from sqlalchemy import Column, Float, Integer, String, Table, Text, func, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..http.lazy_routes import DomainRouter
from ..kernel.dates import IsoDate
from ..kernel.errors import Problem, invalid, not_found, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Quantity, from_cents, q4
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from ..sim import SectionModel, WorldDate, actor, world_section
from . import ledger
from .inventory import EPS, check_location, move, value_of
from .masterdata import get_item, lots, warehouses
from .org import company
from .purchasing.service import line_cents, refresh_po_status
from .purchasing.tables import po_lines, purchase_orders

REFUSAL_REASONS = ("damaged", "short_dated", "wrong_item", "not_ordered", "over_shipment", "quality", "other")
DEFAULT_CEILING_PCT = 10.0

receipts = Table(
    "receipts", metadata,
    *doc_columns(),                                   # posted | reversed
    Column("po_id", String, nullable=False, index=True),
    Column("vendor_id", String, nullable=False),
    Column("warehouse_id", String, nullable=False),
    Column("received_on", String, nullable=False),
    Column("packing_slip", String),
    Column("note", Text),
    Column("je_id", String),
    Column("reversed_on", String),
    Column("reversal_je_id", String),
)

receipt_lines = Table(
    "receipt_lines", metadata,
    Column("receipt_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("po_line", Integer, nullable=False),
    Column("ordered_item_id", String),
    Column("item_id", String),                        # what actually arrived
    Column("substitution", Integer, nullable=False, default=0),
    Column("qty_received", Float, nullable=False),
    Column("qty_refused", Float, nullable=False, default=0.0),
    Column("refusal_reason", String),
    Column("lot_no", String),
    Column("expiry", String),
    Column("location_id", String),
    Column("unit_price", Float, nullable=False),      # PO price
    Column("value_cents", Integer, nullable=False),   # GRNI value: qty received x PO price
    Column("std_value_cents", Integer, nullable=False),
)

register_object("receipt", receipts, [(receipt_lines, "receipt_id")])


class ReceiptLineIn(In):
    """What arrived (and what was refused) against one PO line."""

    po_line: int
    qty_received: Quantity = Field(0, ge=0)  # type: ignore[assignment]
    qty_refused: Quantity = Field(0, ge=0)  # type: ignore[assignment]
    refusal_reason: str | None = Field(None, description=" | ".join(REFUSAL_REASONS))
    item_id: str | None = Field(None, description="The item actually received when it differs from the PO line "
                                                  "(a substitution)")
    lot_no: str | None = Field(None, max_length=100)
    expiry: IsoDate | None = None
    location_id: str | None = None


class ReceiptIn(In):
    """A receipt against a sent purchase order."""

    po_id: str
    warehouse_id: str | None = None
    packing_slip: str | None = Field(None, max_length=100)
    note: str | None = Field(None, max_length=4000)
    lines: list[ReceiptLineIn] = Field(min_length=1, max_length=200)


class ReverseIn(In):
    """Why a receipt is reversed."""

    reason: str = Field(min_length=1, max_length=2000)


def ceiling_pct(tx: Tx) -> float:
    """The system over-receipt ceiling in percent (company setting over_receipt_ceiling_pct)."""
    row = tx.find(company, key="over_receipt_ceiling_pct")
    return float(row["value"]) if row else DEFAULT_CEILING_PCT


def _warehouse_for(tx: Tx, po: dict[str, Any], body: ReceiptIn) -> str:
    wh = body.warehouse_id or po["warehouse_id"]
    if wh is None:
        first = tx.one(select(warehouses.c.id).order_by(warehouses.c.id))
        if first is None:
            raise invalid("No warehouse exists to receive into.")
        wh = first["id"]
    return wh


def post_receipt(tx: Tx, body: ReceiptIn) -> dict[str, Any]:
    """Post a receipt: stock in at standard cost, GRNI at PO price, PPV for the difference."""
    po = tx.get(purchase_orders, body.po_id, "purchase_order")
    if po["status"] in ("draft", "approved"):
        raise refused("po_not_sent", f"Purchase order {po['id']} is {po['status']}; only a sent order can be received.",
                      status=po["status"])
    if po["status"] not in ("sent", "partially_received"):
        raise refused("po_not_open", f"Purchase order {po['id']} is {po['status']}; nothing more can be received on it.",
                      status=po["status"])
    wh = _warehouse_for(tx, po, body)
    check_location(tx, wh, None)
    pct = ceiling_pct(tx)
    seen: dict[int, float] = {}
    prepared = []
    for n, l in enumerate(body.lines, start=1):
        line = tx.find(po_lines, po_id=po["id"], line_no=l.po_line)
        if line is None:
            raise not_found("purchase order line", f"{po['id']}/{l.po_line}")
        if line["status"] != "open":
            raise refused("line_not_open", f"Line {l.po_line} of {po['id']} is {line['status']}.")
        qty, refused_qty = q4(l.qty_received), q4(l.qty_refused)
        if qty <= EPS and refused_qty <= EPS:
            raise invalid(f"Line {n}: give qty_received or qty_refused.")
        if refused_qty > EPS and l.refusal_reason not in REFUSAL_REASONS:
            raise invalid(f"Line {n}: a refused quantity needs refusal_reason ({', '.join(REFUSAL_REASONS)}).")
        if refused_qty <= EPS and l.refusal_reason is not None and l.refusal_reason not in REFUSAL_REASONS:
            raise invalid(f"Line {n}: refusal_reason must be one of {', '.join(REFUSAL_REASONS)}.")
        seen[l.po_line] = seen.get(l.po_line, 0.0) + qty
        ceiling = line["qty"] * (1 + pct / 100)
        if line["qty_received"] + seen[l.po_line] > ceiling + EPS:
            raise refused("over_receipt_ceiling",
                          f"Receiving {seen[l.po_line]} more on {po['id']} line {l.po_line} would exceed the system "
                          f"ceiling of {pct:g}% over the ordered {line['qty']}; refuse the excess instead.",
                          ordered=line["qty"], already_received=line["qty_received"], ceiling=q4(ceiling))
        item_id = l.item_id or line["item_id"]
        item = get_item(tx, item_id) if item_id else None
        if l.location_id:
            check_location(tx, wh, l.location_id)
        if item and item["lot_controlled"] and qty > EPS and (not l.lot_no or l.expiry is None):
            raise Problem(422, "lot_required", f"Line {n}: {item_id} is lot-controlled; give lot_no and expiry.")
        prepared.append((l, line, item, qty, refused_qty))
    doc = tx.create_doc("receipt", receipts, "RCV", "posted", po_id=po["id"], vendor_id=po["vendor_id"],
                        warehouse_id=wh, received_on=tx.business_date, packing_slip=body.packing_slip, note=body.note)
    grni_total = std_total = 0
    expense: dict[str, int] = {}
    for n, (l, line, item, qty, refused_qty) in enumerate(prepared, start=1):
        value = line_cents(qty, line["unit_price"])
        std = value_of(tx, item["id"], qty) if item else value
        lot_no = l.lot_no if qty > EPS else None
        expiry = l.expiry.isoformat() if l.expiry and qty > EPS else None
        if item and lot_no and tx.find(lots, item_id=item["id"], lot_no=lot_no) is None:
            tx.insert(lots, item_id=item["id"], lot_no=lot_no, expiry=expiry, vendor_id=po["vendor_id"],
                      first_received=tx.business_date)
        tx.insert(receipt_lines, receipt_id=doc["id"], line_no=n, po_line=line["line_no"],
                  ordered_item_id=line["item_id"], item_id=item["id"] if item else None,
                  substitution=1 if (item and line["item_id"] and item["id"] != line["item_id"]) else 0,
                  qty_received=qty, qty_refused=refused_qty, refusal_reason=l.refusal_reason, lot_no=lot_no,
                  expiry=expiry, location_id=l.location_id, unit_price=line["unit_price"], value_cents=value,
                  std_value_cents=std)
        if item and qty > EPS:
            move(tx, item_id=item["id"], warehouse_id=wh, location_id=l.location_id, lot_no=lot_no, qty=qty,
                 kind="receipt", doc_type="receipt", doc_id=doc["id"], doc_line=n, value_cents=std)
            std_total += std
        elif qty > EPS:
            acct = line["account_id"] or "6900"
            expense[acct] = expense.get(acct, 0) + value
        grni_total += value
        tx.touch("purchase_order", po["id"])
        tx.conn.execute(po_lines.update().where(po_lines.c.po_id == po["id"], po_lines.c.line_no == line["line_no"])
                        .values(qty_received=func.round(po_lines.c.qty_received + qty, 4),
                                qty_refused=func.round(po_lines.c.qty_refused + refused_qty, 4)))
    je = ledger.post(tx, source="receiving", source_ref=doc["id"], memo=f"Receipt {doc['id']} on {po['id']}",
                     lines=_receipt_lines(doc["id"], po["vendor_id"], std_total, grni_total, expense))
    tx.update(receipts, doc["id"], je_id=je or None)
    refresh_po_status(tx, po["id"], f"receipt {doc['id']}")
    return receipt_view(tx, doc["id"])


def _receipt_lines(ref: str, vendor_id: str, std_total: int, grni_total: int, expense: dict[str, int],
                   sign: int = 1) -> list[ledger.Line]:
    ppv = grni_total - std_total - sum(expense.values())
    out = [ledger.Line("rule:inventory", sign * std_total, party_type="item", doc_ref=ref),
           ledger.Line("rule:grni", -sign * grni_total, party_type="vendor", party_id=vendor_id, doc_ref=ref),
           ledger.Line("rule:ppv", sign * ppv, doc_ref=ref)]
    out += [ledger.Line(acct, sign * v, doc_ref=ref) for acct, v in sorted(expense.items())]
    return out


def reverse_receipt(tx: Tx, receipt_id: str, body: ReverseIn) -> dict[str, Any]:
    """Reverse a posted receipt that has not been invoiced: stock out, GRNI and PPV back."""
    rcv = tx.get(receipts, receipt_id, "receipt")
    if rcv["status"] != "posted":
        raise refused("bad_status", f"receipt {receipt_id} is {rcv['status']}; only a posted receipt can be reversed.",
                      status=rcv["status"])
    back: dict[int, float] = {}
    for rl in tx.rows(receipt_lines, receipt_id=receipt_id):
        back[rl["po_line"]] = back.get(rl["po_line"], 0.0) + rl["qty_received"]
    for po_line, qty in sorted(back.items()):
        line = tx.find(po_lines, po_id=rcv["po_id"], line_no=po_line)
        billed = _invoiced_qty(tx, rcv["po_id"], po_line)
        if billed > (line["qty_received"] - qty) + EPS:  # type: ignore[index]
            raise refused("has_invoices", f"{billed} of {rcv['po_id']} line {po_line} is already invoiced; "
                          f"reversing {receipt_id} would leave it billed but not received. Void or credit the "
                          f"invoice first.")
    tx.set_status("receipt", receipts, receipt_id, "reversed", body.reason, allowed_from=["posted"],
                  reversed_on=tx.business_date)
    std_total = grni_total = 0
    expense: dict[str, int] = {}
    for rl in tx.rows(receipt_lines, receipt_id=receipt_id):
        if rl["item_id"] and rl["qty_received"] > EPS:
            move(tx, item_id=rl["item_id"], warehouse_id=rcv["warehouse_id"], location_id=rl["location_id"],
                 lot_no=rl["lot_no"], qty=-rl["qty_received"], kind="receipt_reversal", doc_type="receipt",
                 doc_id=receipt_id, doc_line=rl["line_no"], value_cents=-rl["std_value_cents"])
            std_total += rl["std_value_cents"]
        elif rl["qty_received"] > EPS:
            line = tx.find(po_lines, po_id=rcv["po_id"], line_no=rl["po_line"])
            acct = (line or {}).get("account_id") or "6900"
            expense[acct] = expense.get(acct, 0) + rl["value_cents"]
        grni_total += rl["value_cents"]
        tx.touch("purchase_order", rcv["po_id"])
        tx.conn.execute(po_lines.update().where(po_lines.c.po_id == rcv["po_id"], po_lines.c.line_no == rl["po_line"])
                        .values(qty_received=func.max(func.round(po_lines.c.qty_received - rl["qty_received"], 4), 0.0),
                                qty_refused=func.max(func.round(po_lines.c.qty_refused - rl["qty_refused"], 4), 0.0)))
    je = ledger.post(tx, source="receiving", source_ref=receipt_id, memo=f"Reversal of receipt {receipt_id}",
                     lines=_receipt_lines(receipt_id, rcv["vendor_id"], std_total, grni_total, expense, sign=-1))
    tx.update(receipts, receipt_id, reversal_je_id=je or None)
    po = tx.get(purchase_orders, rcv["po_id"])
    if po["status"] in ("received", "partially_received"):
        refresh_po_status(tx, po["id"], f"receipt {receipt_id} reversed")
    return receipt_view(tx, receipt_id)


def receipt_view(tx: Tx, receipt_id: str) -> dict[str, Any]:
    """A receipt with lines, history and links."""
    rcv = tx.get(receipts, receipt_id, "receipt")
    lines = []
    for rl in tx.rows(receipt_lines, receipt_id=receipt_id):
        out = {k: v for k, v in rl.items() if not k.endswith("_cents")}
        out["substitution"] = bool(rl["substitution"])
        out["value"] = from_cents(rl["value_cents"])
        out["std_value"] = from_cents(rl["std_value_cents"])
        lines.append(out)
    return {**{k: v for k, v in rcv.items() if k != "created_wall"}, "lines": lines,
            "history": tx.history("receipt", receipt_id),
            "links": {"purchase_order": [rcv["po_id"]], "vendor": [rcv["vendor_id"]],
                      "journal_entry": [j for j in (rcv["je_id"], rcv["reversal_je_id"]) if j]}}


# GRNI ------------------------------------------------------------------------------------------

# Invoices are downstream of receipts: payables (which imports receiving) registers what
# receiving needs to know about them. Unregistered, the questions are errors, never zero.
_INVOICE_FACTS: dict[str, Callable[..., Any]] = {}


def register_invoice_facts(*, grni_cleared_cents: Callable[..., int], invoiced_qty: Callable[..., float]) -> None:
    """Install payables' answers: GRNI relieved by validated invoices
    (``fn(conn, as_of, po_id, po_line) -> cents``) and the quantity billed on a PO line
    (``fn(tx, po_id, po_line) -> qty``)."""
    _INVOICE_FACTS.update(grni_cleared_cents=grni_cleared_cents, invoiced_qty=invoiced_qty)


def _invoice_fact(name: str) -> Callable[..., Any]:
    fn = _INVOICE_FACTS.get(name)
    if fn is None:
        raise RuntimeError(f"receiving needs {name} from payables, which is not imported")
    return fn


def _cleared(conn, as_of: str | None = None, po_id: str | None = None, po_line: int | None = None) -> int:
    """GRNI relieved by validated vendor invoices (owned by payables)."""
    return _invoice_fact("grni_cleared_cents")(conn, as_of, po_id, po_line)


def _invoiced_qty(tx: Tx, po_id: str, po_line: int) -> float:
    return _invoice_fact("invoiced_qty")(tx, po_id, po_line)


def received_cents(conn, as_of: str | None = None, po_id: str | None = None, po_line: int | None = None) -> int:
    """Value received at PO price, net of reversals, up to `as_of`."""
    def total(stmt) -> int:
        return int(conn.execute(stmt).scalar() or 0)
    recv = select(func.coalesce(func.sum(receipt_lines.c.value_cents), 0)).join(
        receipts, receipts.c.id == receipt_lines.c.receipt_id)
    if po_id is not None:
        recv = recv.where(receipts.c.po_id == po_id)
    if po_line is not None:
        recv = recv.where(receipt_lines.c.po_line == po_line)
    rev = recv.where(receipts.c.status == "reversed")
    if as_of:
        recv = recv.where(receipts.c.received_on <= as_of)
        rev = rev.where(receipts.c.reversed_on <= as_of)
    return total(recv) - total(rev)


def grni_lines(tx: Tx, *, as_of: str | None = None, vendor_id: str | None = None,
               po_id: str | None = None) -> list[dict[str, Any]]:
    """Per PO line: value received (PO price), value invoiced (cleared), and what is still open."""
    pol, pos = po_lines, purchase_orders
    stmt = (select(pos.c.id, pos.c.vendor_id, pol.c.line_no, pol.c.item_id, pol.c.unit_price)
            .join(pol, pol.c.po_id == pos.c.id).order_by(pos.c.id, pol.c.line_no))
    if vendor_id:
        stmt = stmt.where(pos.c.vendor_id == vendor_id)
    if po_id:
        stmt = stmt.where(pos.c.id == po_id)
    out = []
    for r in tx.all(stmt):
        recv = received_cents(tx.conn, as_of, r["id"], r["line_no"])
        if recv == 0:
            continue
        cleared = _cleared(tx.conn, as_of, r["id"], r["line_no"])
        first = tx.scalar(select(func.min(receipts.c.received_on)).join(
            receipt_lines, receipt_lines.c.receipt_id == receipts.c.id).where(
            receipts.c.po_id == r["id"], receipt_lines.c.po_line == r["line_no"], receipts.c.status == "posted"))
        if recv - cleared != 0:
            out.append({"po_id": r["id"], "po_line": r["line_no"], "vendor_id": r["vendor_id"], "item_id": r["item_id"],
                        "unit_price": r["unit_price"], "received_cents": recv, "invoiced_cents": cleared,
                        "open_cents": recv - cleared, "first_received": first})
    return out


def grni_subledger(conn, as_of: str | None) -> int:
    """GRNI owed (debit positive, so normally negative): received at PO price − reversed −
    cleared by validated invoices."""
    return -(received_cents(conn, as_of) - _cleared(conn, as_of))


ledger.register_subledger("grni", grni_subledger)


# Routes ----------------------------------------------------------------------------------------

class ReceiptOut(BaseModel):
    id: str
    status: str
    po_id: str
    vendor_id: str
    warehouse_id: str
    received_on: str
    packing_slip: str | None = None
    note: str | None = None
    je_id: str | None = None
    reversed_on: str | None = None
    reversal_je_id: str | None = None
    created_by: str | None = None
    created_on: str


class ReceiptDetail(ReceiptOut):
    lines: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, list[str]]


router = DomainRouter(tags=["receiving"])


@router.get("/receipts", response_model=Envelope[Page[ReceiptOut]],
            summary="List receipts (filters: po_id, vendor_id, status, received_on)")
def list_receipts(po_id: str | None = None, vendor_id: str | None = None, status: str | None = None,
                  received_on: IsoDate | None = None, page: PageRequest = Depends(page_params),
                  api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(receipts).order_by(receipts.c.id), page, po_id=po_id,
                                        vendor_id=vendor_id, status=status,
                                        received_on=received_on.isoformat() if received_on else None))


@router.get("/receipts/{receipt_id}", response_model=Envelope[ReceiptDetail],
            summary="One receipt with lines (lots, refusals, substitutions), history and links")
def get_receipt(receipt_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: receipt_view(tx, receipt_id), object_type="receipt", object_id=receipt_id)


@router.post("/receipts", operation_id="rcv.post", status_code=201, response_model=Envelope[ReceiptDetail],
             summary="Post a receipt against a sent PO (lot and expiry for lot-controlled items; refusals need a reason)")
def post_receipt_route(body: ReceiptIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: post_receipt(tx, body))


@router.post("/receipts/{receipt_id}/reverse", operation_id="rcv.reverse", status_code=201,
             response_model=Envelope[ReceiptDetail], summary="Reverse a posted, uninvoiced receipt")
def reverse_receipt_route(receipt_id: str, body: ReverseIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: reverse_receipt(tx, receipt_id, body))


# Scheduled receipts (world["receipts"], world["receipt_reversals"]) ---------------------------

class ScheduledReceipt(ReceiptIn):
    """``receipts[]``: a receipt the scenario posts on `date` as `user` (or `by`)."""

    date: WorldDate
    user: str | None = None
    by: str | None = None


class ScheduledReversal(SectionModel):
    """``receipt_reversals[]``: a receipt the scenario reverses on `date`."""

    date: WorldDate
    receipt_id: str
    user: str | None = None
    reason: str | None = None


world_section("receipts", list[ScheduledReceipt], owner=__name__, doc="receipts posted on set days")
world_section("receipt_reversals", list[ScheduledReversal], owner=__name__, doc="receipts reversed on set days")


@actor("vendors")
def scheduled_receipts(day) -> None:
    """Post the receipts and reversals the scenario schedules for this day, as the named user."""
    for n, spec in enumerate(day.world.section("receipts", [])):
        if spec.get("date") != day.date:
            continue
        user = spec.get("user") or spec.get("by") or "receiver"
        body = {k: spec[k] for k in ("po_id", "warehouse_id", "packing_slip", "note", "lines") if k in spec}
        try:
            model = ReceiptIn.model_validate(body)
        except Exception as exc:
            raise RuntimeError(f"world receipts[{n}] is not a valid receipt: {exc}") from exc
        day.act(user, "rcv.post", "/receipts", body, lambda tx, m=model: post_receipt(tx, m))
    for spec in day.world.section("receipt_reversals", []):
        if spec.get("date") != day.date:
            continue
        user = spec.get("user") or "receiver"
        body = {"reason": spec.get("reason") or "scheduled reversal"}
        rid = spec["receipt_id"]
        day.act(user, "rcv.reverse", f"/receipts/{rid}/reverse", body,
                lambda tx, r=rid, b=ReverseIn(**body): reverse_receipt(tx, r, b))


# Report ----------------------------------------------------------------------------------------

from .reports import AsOfParams, as_of_of, register_report  # noqa: E402


class GrniParams(AsOfParams):
    vendor_id: str | None = None
    po_id: str | None = None


def grni_report(tx: Tx, params: GrniParams) -> dict[str, Any]:
    """Goods received not invoiced, per PO line, as of a date, with age since first receipt."""
    as_of = as_of_of(tx, params)
    rows = []
    for r in grni_lines(tx, as_of=as_of, vendor_id=params.vendor_id, po_id=params.po_id):
        age = (dt.date.fromisoformat(as_of) - dt.date.fromisoformat(r["first_received"])).days \
            if r["first_received"] else None
        rows.append({"po_id": r["po_id"], "po_line": r["po_line"], "vendor_id": r["vendor_id"],
                     "item_id": r["item_id"], "unit_price": r["unit_price"],
                     "received": from_cents(r["received_cents"]), "invoiced": from_cents(r["invoiced_cents"]),
                     "open": from_cents(r["open_cents"]), "first_received": r["first_received"], "age_days": age})
    total = sum(r["open_cents"] for r in grni_lines(tx, as_of=as_of, vendor_id=params.vendor_id, po_id=params.po_id))
    return {"as_of": as_of, "rows": rows, "total": from_cents(total)}


register_report("grni", grni_report, GrniParams, title="Goods received not invoiced")
