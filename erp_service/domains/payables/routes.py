"""Payables' routes and response models."""
from __future__ import annotations

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.dates import IsoDate
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from .service import (
    HoldIn,
    InvoiceIn,
    LinePatch,
    NoteIn,
    approve_invoice,
    enter_invoice,
    place_hold,
    reject_invoice,
    release_hold,
    update_line,
    validate_invoice,
    void_invoice,
)
from .tables import ap_invoices
from .views import invoice_detail, invoice_outs


class InvoiceOut(BaseModel):
    id: str
    status: str
    vendor: str
    invoice_no: str
    invoice_date: str
    terms: str
    due_date: str
    discount_date: str | None = None
    discount: float
    total: float
    open: float
    po: str | None = None
    source_ref: str | None = None
    memo: str | None = None
    on_hold: bool
    disputed: bool
    entered_by: str | None = None
    entered_on: str
    validated_on: str | None = None
    approved_by: str | None = None


class InvoiceLineOut(BaseModel):
    line_no: int
    kind: str
    po_line: int | None = None
    item: str | None = None
    description: str | None = None
    qty: float | None = None
    unit_price: float | None = None
    amount: float
    account: str | None = None


class HoldOut(BaseModel):
    id: str
    invoice: str
    line_no: int | None = None
    reason: str
    note: str | None = None
    status: str
    placed_by: str | None = None
    placed_on: str
    released_by: str | None = None
    released_on: str | None = None
    release_note: str | None = None


class MatchLineOut(BaseModel):
    line_no: int
    result: str
    po_line: int | None = None
    po_price: float | None = None
    billed_price: float | None = None
    ordered: float | None = None
    received: float | None = None
    previously_invoiced: float | None = None
    billed_qty: float | None = None


class MatchOut(BaseModel):
    result: str
    lines: list[MatchLineOut]


class InvoicePaymentOut(BaseModel):
    payment: str
    run: str
    status: str
    amount: float
    discount: float
    released_on: str | None = None
    cleared_on: str | None = None


class HistoryOut(BaseModel):
    from_status: str | None = None
    to_status: str
    on_date: str
    by_user: str | None = None
    reason: str | None = None


class InvoiceDetail(InvoiceOut):
    lines: list[InvoiceLineOut]
    holds: list[HoldOut]
    match: MatchOut
    payments: list[InvoicePaymentOut]
    history: list[HistoryOut]
    links: dict[str, list[str]]


router = DomainRouter(tags=["payables"])


@router.get("/ap-invoices", response_model=Envelope[Page[InvoiceOut]],
            summary="List AP invoices (filters: status, vendor, invoice_no, po, due_before)")
def list_invoices(status: str | None = None, vendor: str | None = None, invoice_no: str | None = None,
                  po: str | None = None, due_before: IsoDate | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(ap_invoices).order_by(ap_invoices.c.id)
        if due_before:
            stmt = stmt.where(ap_invoices.c.due_date <= due_before.isoformat())
        out = paginate(tx, stmt, page, status=status, vendor_id=vendor, invoice_no=invoice_no, po_id=po)
        out["items"] = invoice_outs(tx, out["items"])   # the page at once, not a few queries per row
        return out
    return api.read(fn)


@router.get("/ap-invoices/{invoice_id}", response_model=Envelope[InvoiceDetail],
            summary="One AP invoice: lines, holds, three-way match, open amount, payments, history, links")
def get_invoice(invoice_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: invoice_detail(tx, invoice_id), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices", operation_id="ap.enter", status_code=201, response_model=Envelope[InvoiceDetail],
             summary="Enter a vendor invoice as billed (exact duplicate vendor+invoice_no is refused)")
def post_invoice(body: InvoiceIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: enter_invoice(tx, body))


@router.patch("/ap-invoices/{invoice_id}/lines/{line_no}", operation_id="ap.update_line",
              response_model=Envelope[InvoiceDetail], summary="Correct a line while the invoice is entered")
def patch_line(invoice_id: str, line_no: int, body: LinePatch, api: Api = Depends(write_api)):
    return api.write(lambda tx: update_line(tx, invoice_id, line_no, body), object_type="ap_invoice",
                     object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/holds", operation_id="ap.hold", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Put an invoice on hold with a reason code")
def post_hold(invoice_id: str, body: HoldIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: place_hold(tx, invoice_id, body), object_type="ap_invoice", object_id=invoice_id)


@router.post("/holds/{hold_id}/release", operation_id="ap.release_hold", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Release a hold")
def post_release(hold_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_hold(tx, hold_id, body), object_type="hold", object_id=hold_id)


@router.post("/ap-invoices/{invoice_id}/validate", operation_id="ap.validate", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Validate (post) an entered invoice")
def post_validate(invoice_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: validate_invoice(tx, invoice_id), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/approve", operation_id="ap.approve", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Approve a validated invoice for payment")
def post_approve(invoice_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: approve_invoice(tx, invoice_id), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/reject", operation_id="ap.reject", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Reject an entered invoice")
def post_reject(invoice_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: reject_invoice(tx, invoice_id, body), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/void", operation_id="ap.void", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Void an invoice (reversed if validated; refused if paid)")
def post_void(invoice_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: void_invoice(tx, invoice_id, body), object_type="ap_invoice", object_id=invoice_id)
