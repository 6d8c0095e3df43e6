"""Receivables' routes and response models."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from .service import ApplyIn, CashReceiptIn, apply_receipt, invoice_shipment, invoice_view, receipt_view, record_receipt
from .tables import ar_invoices, cash_receipts


class ArLineOut(BaseModel):
    line_no: int
    so_line: int | None = None
    item_id: str | None = None
    qty: float
    unit_price: float
    amount: float


class ArInvoiceOut(BaseModel):
    id: str
    status: str
    customer_id: str
    invoice_date: str
    due_date: str
    terms: str
    customer_po: str | None = None
    subtotal: float
    tax: float
    total: float
    applied: float
    open: float
    created_by: str | None = None
    lines: list[ArLineOut]
    applications: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, Any]


class CashReceiptOut(BaseModel):
    id: str
    status: str
    customer_id: str
    receipt_date: str
    amount: float
    applied: float
    unapplied: float
    reference: str | None = None
    method: str
    note: str | None = None
    created_by: str | None = None
    applications: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, Any]


router = DomainRouter(tags=["receivables"])


@router.post("/shipments/{shipment_id}/invoice", operation_id="ar.invoice", status_code=201,
             response_model=Envelope[ArInvoiceOut], summary="Invoice a shipment (posts AR, revenue and tax)")
def post_invoice(shipment_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: invoice_shipment(tx, shipment_id))


@router.get("/ar-invoices", response_model=Envelope[Page[ArInvoiceOut]], summary="List customer invoices")
def list_invoices(status: str | None = None, customer_id: str | None = None, so_id: str | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(ar_invoices).order_by(ar_invoices.c.id), page,
                                        render=lambda r: invoice_view(tx, r["id"]), status=status,
                                        customer_id=customer_id, so_id=so_id))


@router.get("/ar-invoices/{invoice_id}", response_model=Envelope[ArInvoiceOut],
            summary="One customer invoice with lines, applications, history and links")
def get_invoice(invoice_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: invoice_view(tx, invoice_id), object_type="ar_invoice", object_id=invoice_id)


@router.get("/cash-receipts", response_model=Envelope[Page[CashReceiptOut]], summary="List cash receipts")
def list_receipts(status: str | None = None, customer_id: str | None = None, reference: str | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(cash_receipts).order_by(cash_receipts.c.id), page,
                                        render=lambda r: receipt_view(tx, r["id"]), status=status,
                                        customer_id=customer_id, reference=reference))


@router.get("/cash-receipts/{receipt_id}", response_model=Envelope[CashReceiptOut], summary="One cash receipt")
def get_receipt(receipt_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: receipt_view(tx, receipt_id), object_type="cash_receipt", object_id=receipt_id)


@router.post("/cash-receipts", operation_id="ar.cash", status_code=201, response_model=Envelope[CashReceiptOut],
             summary="Record customer cash (unapplied until applied)")
def post_receipt(body: CashReceiptIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: record_receipt(tx, body))


@router.post("/cash-receipts/{receipt_id}/apply", operation_id="ar.apply", status_code=201,
             response_model=Envelope[CashReceiptOut], summary="Apply unapplied cash to open invoices")
def post_apply(receipt_id: str, body: ApplyIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: apply_receipt(tx, receipt_id, body), object_type="cash_receipt",
                     object_id=receipt_id)
