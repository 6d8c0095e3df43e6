"""Receiving response models and routes."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.dates import IsoDate
from ...kernel.listing import PageRequest, paginate
from .schemas import ReceiptIn, ReverseIn
from .service import post_receipt, receipt_view, reverse_receipt
from .tables import receipts

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
