"""Vendor requests (expedite, defer, cancel, dispute, copy_request) and their answers."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.errors import invalid, not_found, refused
from ...kernel.money import Quantity, from_cents
from ...kernel.schema import metadata
from ...kernel.tx import Tx
from .common import OPEN_PO, REQUEST_KINDS, VENDOR_REQUEST_HOOKS, vendor_row
from .tables import (
    po_lines,
    purchase_orders,
    vendor_requests,
)


class VendorRequestIn(In):
    """Ask a vendor to expedite, defer or cancel a PO line, dispute an invoice, or send a copy."""

    kind: str = Field(description="expedite | defer | cancel | dispute | copy_request")
    vendor_id: str | None = None
    po_id: str | None = None
    po_line: int | None = None
    ap_invoice_id: str | None = None
    invoice_no: str | None = Field(None, max_length=100)
    requested_date: IsoDate | None = None
    reason: str | None = Field(None, max_length=100)
    note: str | None = Field(None, max_length=4000)


class VendorAnswerIn(In):
    """The vendor's answer to a request."""

    decision: str = Field(description="accepted | refused")
    answer_date: IsoDate | None = None
    credit_amount: Quantity | None = Field(None, ge=0)
    credit_memo_no: str | None = Field(None, max_length=100)
    note: str | None = Field(None, max_length=4000)


def create_vendor_request(tx: Tx, body: VendorRequestIn) -> dict[str, Any]:
    """Record a request to a vendor; the vendor answers it on a later business day."""
    if body.kind not in REQUEST_KINDS:
        raise invalid(f"kind must be one of {', '.join(REQUEST_KINDS)}.")
    vendor_id = body.vendor_id
    if body.po_id:
        po = tx.get(purchase_orders, body.po_id, "purchase_order")
        vendor_id = vendor_id or po["vendor_id"]
        if vendor_id != po["vendor_id"]:
            raise invalid(f"{body.po_id} is an order with {po['vendor_id']}, not {vendor_id}.")
        if body.kind in ("expedite", "defer", "cancel") and po["status"] not in OPEN_PO:
            raise refused("po_not_open", f"Purchase order {body.po_id} is {po['status']}; only a sent order can be "
                          f"expedited, deferred or cancelled.", status=po["status"])
        if body.po_line is not None:
            line = tx.find(po_lines, po_id=body.po_id, line_no=body.po_line)
            if line is None:
                raise not_found("purchase order line", f"{body.po_id}/{body.po_line}")
            if body.kind in ("expedite", "defer", "cancel") and line["status"] != "open":
                raise refused("line_not_open", f"Line {body.po_line} of {body.po_id} is {line['status']}.")
    elif body.kind in ("expedite", "defer", "cancel"):
        raise invalid(f"A {body.kind} request needs po_id.")
    invoice_no = body.invoice_no
    if body.ap_invoice_id:
        ap_inv = metadata.tables.get("ap_invoices")
        if ap_inv is None:
            raise invalid("Payables are not set up in this company.")
        inv = tx.get(ap_inv, body.ap_invoice_id, "ap_invoice")
        vendor_id = vendor_id or inv.get("vendor_id")
        if inv.get("vendor_id") and vendor_id != inv["vendor_id"]:
            raise invalid(f"{body.ap_invoice_id} is from {inv['vendor_id']}, not {vendor_id}.")
        invoice_no = invoice_no or inv.get("invoice_no")
    if body.kind in ("dispute", "copy_request") and not (body.ap_invoice_id or body.po_id or invoice_no):
        raise invalid(f"A {body.kind} request needs ap_invoice_id, invoice_no or po_id.")
    if body.kind in ("expedite", "defer") and body.requested_date is None:
        raise invalid(f"An {body.kind} request needs requested_date.")
    if not vendor_id:
        raise invalid("Give vendor_id (or a po_id / ap_invoice_id that names the vendor).")
    vendor_row(tx, vendor_id)
    doc = tx.create_doc("vendor_request", vendor_requests, "VREQ", "open", kind=body.kind, vendor_id=vendor_id,
                        po_id=body.po_id, po_line=body.po_line, ap_invoice_id=body.ap_invoice_id,
                        invoice_no=invoice_no,
                        requested_date=body.requested_date.isoformat() if body.requested_date else None,
                        reason=body.reason, note=body.note)
    row = tx.get(vendor_requests, doc["id"])
    for hook in VENDOR_REQUEST_HOOKS:
        hook(tx, row)
    return vendor_request_view(tx, doc["id"])


def answer_vendor_request(tx: Tx, vr_id: str, body: VendorAnswerIn) -> dict[str, Any]:
    """Record the vendor's answer; an accepted expedite/defer moves the confirmed date."""
    vr = tx.get(vendor_requests, vr_id, "vendor_request")
    if body.decision not in ("accepted", "refused"):
        raise invalid("decision must be accepted or refused.")
    date = body.answer_date.isoformat() if body.answer_date else None
    tx.set_status("vendor_request", vendor_requests, vr_id, "answered", f"vendor {body.decision}",
                  allowed_from=["open"], decision=body.decision, answer=body.note, answered_on=tx.business_date,
                  answer_date=date,
                  credit_cents=int(round(float(body.credit_amount) * 100)) if body.credit_amount is not None else None,
                  credit_memo_no=body.credit_memo_no)
    if body.decision == "accepted" and date and vr["kind"] in ("expedite", "defer") and vr["po_id"]:
        tx.touch("purchase_order", vr["po_id"])
        stmt = po_lines.update().where(po_lines.c.po_id == vr["po_id"], po_lines.c.status == "open")
        if vr["po_line"] is not None:
            stmt = stmt.where(po_lines.c.line_no == vr["po_line"])
        tx.conn.execute(stmt.values(confirmed_date=date))
    return vendor_request_view(tx, vr_id)


def vendor_request_view(tx: Tx, vr_id: str) -> dict[str, Any]:
    """A vendor request with its answer, history and links."""
    vr = tx.get(vendor_requests, vr_id, "vendor_request")
    out = {k: v for k, v in vr.items() if k not in ("created_wall", "credit_cents")}
    out["credit_amount"] = from_cents(vr["credit_cents"])
    out["history"] = tx.history("vendor_request", vr_id)
    out["links"] = {"purchase_order": [vr["po_id"]] if vr["po_id"] else [],
                    "ap_invoice": [vr["ap_invoice_id"]] if vr["ap_invoice_id"] else [],
                    "vendor": [vr["vendor_id"]]}
    return out
