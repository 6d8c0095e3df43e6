"""Purchase orders: create (from requisition lines or directly), lines, approve, send, cancel,
close, acknowledgements, and the PO status that receipts move."""
from __future__ import annotations

from typing import Any

from pydantic import Field
from sqlalchemy import select

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.errors import invalid, not_found, refused
from ...kernel.money import Quantity, from_cents, q4
from ...kernel.schema import metadata
from ...kernel.tx import Tx
from .. import org
from ..masterdata import agreement_price, items, warehouses
from .common import EPS, OPEN_PO, line_cents, money_view, require_active_vendor
from .requisitions import NoteIn
from .tables import (
    po_acknowledgements,
    po_lines,
    purchase_orders,
    requisition_lines,
    requisitions,
    vendor_requests,
)


class RequisitionLineRef(In):
    """One line of an approved requisition."""

    requisition_id: str
    requisition_line: int


class POLineIn(In):
    """A PO line: an item (price defaults to the vendor agreement) or a requisition line."""

    item_id: str | None = None
    description: str | None = Field(None, max_length=500)
    qty: Quantity | None = Field(None, gt=0, description="Defaults to the requisition line's quantity")
    unit_price: Quantity | None = Field(None, ge=0, description="Defaults to the agreement price at the highest "
                                                                "quantity break reached")
    need_by: IsoDate | None = None
    account_id: str | None = None
    requisition_id: str | None = None
    requisition_line: int | None = None
    consolidates: list[RequisitionLineRef] = Field(
        default_factory=list, max_length=50,
        description="Further approved requisition lines for the same item ordered on this one line (their "
                    "quantities add to the default quantity)")


class PurchaseOrderIn(In):
    """A new purchase order (draft)."""

    vendor_id: str
    warehouse_id: str | None = None
    need_by: IsoDate | None = None
    note: str | None = Field(None, max_length=4000)
    requisition_id: str | None = Field(None, description="Convert every open line of this approved requisition")
    lines: list[POLineIn] = Field(default_factory=list, max_length=200)


class POLinePatch(In):
    """Change a line of a PO that has not been sent."""

    qty: Quantity | None = Field(None, gt=0)
    unit_price: Quantity | None = Field(None, ge=0)
    need_by: IsoDate | None = None
    description: str | None = Field(None, max_length=500)


class AckLineIn(In):
    """The vendor's answer for one line."""

    line_no: int
    decision: str = Field("accepted", description="accepted | rejected | changed")
    confirmed_date: IsoDate | None = None
    unit_price: Quantity | None = Field(None, ge=0)
    note: str | None = Field(None, max_length=2000)


class AcknowledgementIn(In):
    """A vendor's order acknowledgement."""

    confirmed_date: IsoDate | None = None
    price_notice: str | None = Field(None, max_length=2000)
    lines: list[AckLineIn] = Field(default_factory=list)
    note: str | None = Field(None, max_length=2000)


def _po_editable(po: dict[str, Any]) -> None:
    if po["status"] not in ("draft", "approved"):
        code = "po_sent" if po["status"] in ("sent", "partially_received", "received", "closed") else "bad_status"
        raise refused(code, f"Purchase order {po['id']} is {po['status']}; only a draft or approved order can be "
                      f"changed (send a vendor request instead).", status=po["status"])


def _orderable_line(tx: Tx, req_id: str, line: int) -> dict[str, Any]:
    """An approved requisition line not yet on a PO, or a refusal."""
    req = tx.get(requisitions, req_id, "requisition")
    if req["status"] not in ("approved", "converted"):
        raise refused("req_not_approved", f"Requisition {req['id']} is {req['status']}; only approved lines can "
                      f"be ordered.", status=req["status"])
    req_line = tx.find(requisition_lines, requisition_id=req_id, line_no=line)
    if req_line is None:
        raise not_found("requisition line", f"{req_id}/{line}")
    if req_line["po_id"]:
        raise refused("req_line_converted", f"Requisition line {req_id}/{line} is already "
                      f"on {req_line['po_id']}.", po_id=req_line["po_id"])
    return req_line


def _link_requisition_line(tx: Tx, po_id: str, po_line: int, req_id: str, line: int) -> None:
    """Point a requisition line at the PO line that orders it; the requisition is converted
    once none of its lines is left to order."""
    tx.touch("requisition", req_id)
    tx.conn.execute(requisition_lines.update().where(
        requisition_lines.c.requisition_id == req_id,
        requisition_lines.c.line_no == line).values(po_id=po_id, po_line=po_line))
    open_left = tx.one(select(requisition_lines.c.line_no).where(
        requisition_lines.c.requisition_id == req_id, requisition_lines.c.po_id.is_(None)))
    req = tx.get(requisitions, req_id)
    if open_left is None and req["status"] == "approved":
        tx.set_status("requisition", requisitions, req_id, "converted", f"ordered on {po_id}")


def _add_line(tx: Tx, po: dict[str, Any], l: POLineIn, line_no: int) -> None:
    req_line = None
    if l.requisition_id is not None or l.requisition_line is not None:
        if l.requisition_id is None or l.requisition_line is None:
            raise invalid("Give both requisition_id and requisition_line.")
        req_line = _orderable_line(tx, l.requisition_id, l.requisition_line)
    if l.consolidates and req_line is None:
        raise invalid(f"Line {line_no}: consolidates needs requisition_id and requisition_line for the first line.")
    extra = []
    seen = {(l.requisition_id, l.requisition_line)}
    for ref in l.consolidates:
        if (ref.requisition_id, ref.requisition_line) in seen:
            raise invalid(f"Line {line_no}: requisition line {ref.requisition_id}/{ref.requisition_line} is named "
                          f"twice.")
        seen.add((ref.requisition_id, ref.requisition_line))
        other = _orderable_line(tx, ref.requisition_id, ref.requisition_line)
        if req_line is not None and other["item_id"] != req_line["item_id"]:
            raise invalid(f"Line {line_no}: {ref.requisition_id}/{ref.requisition_line} is for "
                          f"{other['item_id']}, not {req_line['item_id']}; only one item can share a PO line.")
        extra.append(other)
    item_id = l.item_id or (req_line["item_id"] if req_line else None)
    item = tx.find(items, id=item_id) if item_id else None
    if item_id and item is None:
        raise not_found("item", item_id)
    description = l.description or (item["description"] if item else None) or \
        (req_line["description"] if req_line else None)
    if not description:
        raise invalid(f"Line {line_no}: give an item_id or a description.")
    qty = q4(l.qty if l.qty is not None else
             (req_line["qty"] + sum(x["qty"] for x in extra) if req_line else 0))
    if qty <= 0:
        raise invalid(f"Line {line_no}: give a positive qty.")
    if l.unit_price is not None:
        price, source = q4(l.unit_price), "manual"
    else:
        agr = agreement_price(tx, po["vendor_id"], item_id, qty) if item_id else None
        if agr:
            price, source = q4(agr[0]), f"agreement:{agr[1]}"
        elif req_line:
            price, source = q4(req_line["unit_price"]), "requisition"
        elif item:
            price, source = q4(item["standard_cost"]), "standard"
        else:
            raise invalid(f"Line {line_no}: give a unit_price.")
    need_by = l.need_by.isoformat() if l.need_by else (req_line["need_by"] if req_line else None) or po["need_by"]
    tx.insert(po_lines, po_id=po["id"], line_no=line_no, item_id=item_id, description=description, qty=qty,
              uom=item["uom"] if item else None, unit_price=price, amount_cents=line_cents(qty, price),
              price_source=source, account_id=l.account_id or (req_line["account_id"] if req_line else None),
              need_by=need_by, qty_received=0.0, qty_refused=0.0, status="open",
              requisition_id=l.requisition_id, requisition_line=l.requisition_line)
    if req_line and l.requisition_id is not None and l.requisition_line is not None:
        _link_requisition_line(tx, po["id"], line_no, l.requisition_id, l.requisition_line)
        for x in extra:
            _link_requisition_line(tx, po["id"], line_no, x["requisition_id"], x["line_no"])


def _retotal(tx: Tx, po_id: str) -> None:
    total = sum(l["amount_cents"] for l in tx.rows(po_lines, po_id=po_id) if l["status"] != "cancelled")
    tx.update(purchase_orders, po_id, total_cents=total)


def _next_line(tx: Tx, po_id: str) -> int:
    rows = tx.rows(po_lines, po_id=po_id)
    return max((r["line_no"] for r in rows), default=0) + 1


def create_po(tx: Tx, body: PurchaseOrderIn, *, source: str = "manual") -> dict[str, Any]:
    """A draft purchase order for an active vendor."""
    require_active_vendor(tx, body.vendor_id)
    if body.warehouse_id and tx.find(warehouses, id=body.warehouse_id) is None:
        raise not_found("warehouse", body.warehouse_id)
    lines = list(body.lines)
    if body.requisition_id:
        req = tx.get(requisitions, body.requisition_id, "requisition")
        if req["status"] != "approved":
            raise refused("req_not_approved", f"Requisition {req['id']} is {req['status']}; only an approved "
                          f"requisition can be ordered.", status=req["status"])
        lines += [POLineIn(requisition_id=req["id"], requisition_line=rl["line_no"])
                  for rl in tx.rows(requisition_lines, requisition_id=req["id"]) if not rl["po_id"]]
        source = "requisition"
    doc = tx.create_doc("purchase_order", purchase_orders, "PO", "draft", vendor_id=body.vendor_id,
                        buyer=tx.actor.user_id, warehouse_id=body.warehouse_id, order_date=tx.business_date,
                        need_by=body.need_by.isoformat() if body.need_by else None, total_cents=0, source=source,
                        note=body.note)
    for n, l in enumerate(lines, start=1):
        _add_line(tx, doc, l, n)
    _retotal(tx, doc["id"])
    return po_view(tx, doc["id"])


def _unapprove(tx: Tx, po: dict[str, Any], why: str) -> None:
    if po["status"] == "approved":
        tx.set_status("purchase_order", purchase_orders, po["id"], "draft", why, approved_by=None)


def add_po_line(tx: Tx, po_id: str, body: POLineIn) -> dict[str, Any]:
    """Add a line to a draft or approved PO (an approved PO goes back to draft)."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    _po_editable(po)
    tx.touch("purchase_order", po_id)
    _add_line(tx, po, body, _next_line(tx, po_id))
    _retotal(tx, po_id)
    _unapprove(tx, po, "line added after approval")
    return po_view(tx, po_id)


def update_po_line(tx: Tx, po_id: str, line_no: int, body: POLinePatch) -> dict[str, Any]:
    """Change quantity, price, date or description of a line on an unsent PO."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    _po_editable(po)
    line = tx.find(po_lines, po_id=po_id, line_no=line_no)
    if line is None:
        raise not_found("purchase order line", f"{po_id}/{line_no}")
    values = body.model_dump(exclude_unset=True)
    if not values:
        raise invalid("Nothing to change.")
    upd: dict[str, Any] = {}
    qty, price = line["qty"], line["unit_price"]
    if values.get("qty") is not None:
        qty = upd["qty"] = q4(values["qty"])
        if line["price_source"] and line["price_source"].startswith("agreement:") and values.get("unit_price") is None:
            agr = agreement_price(tx, po["vendor_id"], line["item_id"], qty) if line["item_id"] else None
            if agr:
                price = upd["unit_price"] = q4(agr[0])
                upd["price_source"] = f"agreement:{agr[1]}"
    if values.get("unit_price") is not None:
        price = upd["unit_price"] = q4(values["unit_price"])
        upd["price_source"] = "manual"
    if values.get("need_by") is not None:
        upd["need_by"] = values["need_by"].isoformat()
    if values.get("description"):
        upd["description"] = values["description"]
    upd["amount_cents"] = line_cents(qty, price)
    tx.touch("purchase_order", po_id)
    tx.conn.execute(po_lines.update().where(po_lines.c.po_id == po_id, po_lines.c.line_no == line_no).values(**upd))
    _retotal(tx, po_id)
    _unapprove(tx, po, "line changed after approval")
    return po_view(tx, po_id)


def _uncovered_cents(tx: Tx, po_id: str) -> int:
    """Value on the PO not backed by an approved requisition line."""
    return sum(l["amount_cents"] for l in tx.rows(po_lines, po_id=po_id)
               if l["status"] != "cancelled" and not l["requisition_id"])


def approve_po(tx: Tx, po_id: str, body: NoteIn | None) -> dict[str, Any]:
    """Approve a draft PO: not by its buyer, and within the approver's purchase-order limit."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    if po["status"] != "draft":
        raise refused("bad_status", f"purchase_order {po_id} is {po['status']}; only a draft can be approved.",
                      status=po["status"])
    if po["buyer"] == tx.actor.user_id or po["created_by"] == tx.actor.user_id:
        raise refused("preparer_cannot_approve", f"You prepared {po_id}; someone else must approve it.")
    if not tx.rows(po_lines, po_id=po_id):
        raise refused("empty_po", f"Purchase order {po_id} has no lines.")
    limit = org.approval_limit_cents(tx, tx.actor.user_id, "purchase_order")
    if po["total_cents"] > limit:
        raise refused("over_limit", f"Purchase order {po_id} totals {from_cents(po['total_cents']):.2f}, above your "
                      f"purchase-order limit of {from_cents(limit):.2f}.",
                      amount=from_cents(po["total_cents"]), limit=from_cents(limit))
    tx.set_status("purchase_order", purchase_orders, po_id, "approved", (body.note if body else None) or "approved",
                  approved_by=tx.actor.user_id)
    return po_view(tx, po_id)


def send_po(tx: Tx, po_id: str) -> dict[str, Any]:
    """Send a PO to its vendor. A draft PO may be sent when the value not backed by approved
    requisitions is within the sender's purchase-order limit; otherwise it needs approval."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    if po["status"] not in ("draft", "approved"):
        raise refused("bad_status", f"purchase_order {po_id} is {po['status']}; only a draft or approved order can "
                      f"be sent.", status=po["status"])
    require_active_vendor(tx, po["vendor_id"])
    if not [l for l in tx.rows(po_lines, po_id=po_id) if l["status"] == "open"]:
        raise refused("empty_po", f"Purchase order {po_id} has no open lines.")
    if po["status"] == "draft":
        uncovered = _uncovered_cents(tx, po_id)
        limit = org.approval_limit_cents(tx, tx.actor.user_id, "purchase_order")
        if uncovered > limit:
            raise refused("over_limit", f"{from_cents(uncovered):.2f} of {po_id} is not backed by an approved "
                          f"requisition and exceeds your purchase-order limit of {from_cents(limit):.2f}; "
                          f"have it approved first.", amount=from_cents(uncovered), limit=from_cents(limit))
    tx.set_status("purchase_order", purchase_orders, po_id, "sent", "sent to vendor", sent_on=tx.business_date)
    return po_view(tx, po_id)


def _has_receipts(tx: Tx, po_id: str) -> bool:
    return any(l["qty_received"] > EPS for l in tx.rows(po_lines, po_id=po_id))


def cancel_po(tx: Tx, po_id: str, body: NoteIn | None) -> dict[str, Any]:
    """Cancel a PO that has received nothing; its requisition lines become orderable again."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    if po["status"] in ("partially_received", "received") or _has_receipts(tx, po_id):
        raise refused("has_receipts", f"Purchase order {po_id} has receipts; close its lines instead.")
    tx.set_status("purchase_order", purchase_orders, po_id, "cancelled", (body.note if body else None) or "cancelled",
                  allowed_from=["draft", "approved", "sent"])
    tx.conn.execute(po_lines.update().where(po_lines.c.po_id == po_id).values(status="cancelled"))
    # Every requisition line the PO ordered (consolidated lines included) is orderable again.
    ordered = sorted({r["requisition_id"] for r in tx.rows(requisition_lines, po_id=po_id)})
    for req_id in ordered:
        tx.touch("requisition", req_id)
        tx.conn.execute(requisition_lines.update().where(requisition_lines.c.requisition_id == req_id,
                                                         requisition_lines.c.po_id == po_id)
                        .values(po_id=None, po_line=None))
        req = tx.get(requisitions, req_id)
        if req["status"] == "converted":
            tx.set_status("requisition", requisitions, req["id"], "approved", f"{po_id} cancelled")
    return po_view(tx, po_id)


def refresh_po_status(tx: Tx, po_id: str, reason: str) -> None:
    """Set a sent PO's status from its lines: received when every line is received or closed."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    if po["status"] not in ("sent", "partially_received", "received"):
        return
    lines = [l for l in tx.rows(po_lines, po_id=po_id) if l["status"] != "cancelled"]
    any_received = any(l["qty_received"] > EPS for l in lines)
    all_done = all(l["status"] == "closed" or l["qty_received"] + EPS >= l["qty"] for l in lines)
    to = "received" if all_done and any_received else ("closed" if all_done else
                                                       "partially_received" if any_received else "sent")
    if to != po["status"]:
        tx.set_status("purchase_order", purchase_orders, po_id, to, reason)


def close_po_line(tx: Tx, po_id: str, line_no: int, body: NoteIn | None) -> dict[str, Any]:
    """Close an open line of a sent PO (no more is expected)."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    if po["status"] not in OPEN_PO:
        raise refused("po_not_open", f"Purchase order {po_id} is {po['status']}.", status=po["status"])
    line = tx.find(po_lines, po_id=po_id, line_no=line_no)
    if line is None:
        raise not_found("purchase order line", f"{po_id}/{line_no}")
    if line["status"] != "open":
        raise refused("line_not_open", f"Line {line_no} of {po_id} is {line['status']}.")
    tx.touch("purchase_order", po_id)
    tx.conn.execute(po_lines.update().where(po_lines.c.po_id == po_id, po_lines.c.line_no == line_no)
                    .values(status="closed"))
    refresh_po_status(tx, po_id, f"line {line_no} closed")
    return po_view(tx, po_id)


def close_po(tx: Tx, po_id: str, body: NoteIn | None) -> dict[str, Any]:
    """Close a sent or received PO: nothing more will be received."""
    tx.set_status("purchase_order", purchase_orders, po_id, "closed", (body.note if body else None) or "closed",
                  allowed_from=["sent", "partially_received", "received"])
    tx.conn.execute(po_lines.update().where(po_lines.c.po_id == po_id, po_lines.c.status == "open")
                    .values(status="closed"))
    return po_view(tx, po_id)


def acknowledge_po(tx: Tx, po_id: str, body: AcknowledgementIn) -> dict[str, Any]:
    """Record a vendor's acknowledgement (confirmed dates, price notice) of a sent PO."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    if po["status"] not in OPEN_PO:
        raise refused("po_not_open", f"Purchase order {po_id} is {po['status']}; only sent orders are acknowledged.",
                      status=po["status"])
    tx.touch("purchase_order", po_id)
    known = {l["line_no"] for l in tx.rows(po_lines, po_id=po_id)}
    for al in body.lines:
        if al.line_no not in known:
            raise not_found("purchase order line", f"{po_id}/{al.line_no}")
        if al.decision not in ("accepted", "rejected", "changed"):
            raise invalid("decision must be accepted, rejected or changed.")
    header_date = body.confirmed_date.isoformat() if body.confirmed_date else None
    tx.insert(po_acknowledgements, po_id=po_id, line_no=None, ack_date=tx.business_date, decision="accepted",
              confirmed_date=header_date, note=body.price_notice or body.note, by_user=tx.actor.user_id)
    per_line = {al.line_no: al for al in body.lines}
    for l in tx.rows(po_lines, po_id=po_id):
        al = per_line.get(l["line_no"])  # type: ignore[assignment]
        date = (al.confirmed_date.isoformat() if al and al.confirmed_date else None) or header_date
        if al:
            tx.insert(po_acknowledgements, po_id=po_id, line_no=al.line_no, ack_date=tx.business_date,
                      decision=al.decision, confirmed_date=date,
                      unit_price=q4(al.unit_price) if al.unit_price is not None else None, note=al.note,
                      by_user=tx.actor.user_id)
        if date and (al is None or al.decision != "rejected"):
            tx.conn.execute(po_lines.update().where(po_lines.c.po_id == po_id, po_lines.c.line_no == l["line_no"])
                            .values(confirmed_date=date))
    return po_view(tx, po_id)


def po_view(tx: Tx, po_id: str) -> dict[str, Any]:
    """A PO with lines, acknowledgements, receipts, invoices, vendor requests, history, links."""
    po = tx.get(purchase_orders, po_id, "purchase_order")
    lines = tx.rows(po_lines, po_id=po_id)
    receipts_t = metadata.tables.get("receipts")
    receipts = tx.rows(receipts_t, po_id=po_id) if receipts_t is not None else []
    inv_ids: list[str] = []
    ap_lines = metadata.tables.get("ap_invoice_lines")
    if ap_lines is not None and "po_id" in ap_lines.c:
        fk = "invoice_id" if "invoice_id" in ap_lines.c else list(ap_lines.primary_key.columns)[0].name
        inv_ids = sorted({r[fk] for r in tx.rows(ap_lines, po_id=po_id)})
    ap_inv = metadata.tables.get("ap_invoices")
    if ap_inv is not None and "po_id" in ap_inv.c:
        inv_ids = sorted(set(inv_ids) | {r["id"] for r in tx.rows(ap_inv, po_id=po_id)})
    reqs = tx.rows(vendor_requests, po_id=po_id)
    return {**money_view(po, "total_cents"),
            "lines": [{**money_view(l, "amount_cents"), "qty_open": q4(max(l["qty"] - l["qty_received"], 0))
                       if l["status"] == "open" else 0.0} for l in lines],
            "acknowledgements": tx.rows(po_acknowledgements, po_id=po_id),
            "receipts": [{"id": r["id"], "status": r["status"], "received_on": r["received_on"]} for r in receipts],
            "vendor_requests": [{"id": r["id"], "kind": r["kind"], "status": r["status"], "decision": r["decision"],
                                 "answer_date": r["answer_date"]} for r in reqs],
            "history": tx.history("purchase_order", po_id),
            "links": {"requisition": sorted({l["requisition_id"] for l in lines if l["requisition_id"]}),
                      "receipt": [r["id"] for r in receipts], "ap_invoice": inv_ids,
                      "vendor_request": [r["id"] for r in reqs], "vendor": [po["vendor_id"]]}}
