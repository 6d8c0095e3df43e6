"""Inventory response models and routes."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ..masterdata import OnHandRow as OnHandOut
from .schemas import AdjustmentIn, DecisionIn, TransferIn
from .service import approve_adjustment, create_adjustment, create_transfer, reject_adjustment
from .stock import EPS, on_hand_rows
from .tables import adjustments, inventory_txns, transfers


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


@router.post("/inventory/adjustments/{adjustment_id}/approve", operation_id="inv.adjust_approve", status_code=201,
             response_model=Envelope[AdjustmentOut], openapi_extra={"x-permission": "je.approve"},
             summary="Approve an adjustment pending approval (not its preparer): stock and value move today")
def post_approve_adjustment(adjustment_id: str, body: DecisionIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: approve_adjustment(tx, adjustment_id, body), object_type="adjustment",
                     object_id=adjustment_id)


@router.post("/inventory/adjustments/{adjustment_id}/reject", operation_id="inv.adjust_reject", status_code=201,
             response_model=Envelope[AdjustmentOut], openapi_extra={"x-permission": "je.approve"},
             summary="Reject an adjustment pending approval: nothing moves")
def post_reject_adjustment(adjustment_id: str, body: DecisionIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: reject_adjustment(tx, adjustment_id, body), object_type="adjustment",
                     object_id=adjustment_id)


@router.get("/inventory/adjustments", response_model=Envelope[Page[AdjustmentOut]], summary="List adjustments")
def list_adjustments(item_id: str | None = None, reason: str | None = None,
                     page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def render(r):
        return {**{k: v for k, v in r.items() if k != "value_cents"}, "value": from_cents(r["value_cents"])}
    return api.read(lambda tx: paginate(tx, select(adjustments).order_by(adjustments.c.id), page, render=render,
                                        item_id=item_id, reason=reason))
