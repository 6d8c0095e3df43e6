"""Work-order response models and routes."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from .schemas import CompleteIn, IssueIn, WoNoteIn, WorkOrderIn
from .service import (
    cancel_work_order,
    close_work_order,
    complete_work_order,
    create_work_order,
    issue_components,
    release_work_order,
    reverse_issue,
    wo_view,
)
from .tables import work_orders

# Routes ----------------------------------------------------------------------------------------

class WorkOrderOut(BaseModel):
    id: str
    status: str
    item_id: str
    qty: float
    qty_completed: float
    warehouse_id: str
    location_id: str | None = None
    start_date: str | None = None
    due_date: str
    bom_date: str
    source: str
    note: str | None = None
    released_on: str | None = None
    closed_on: str | None = None
    created_by: str | None = None
    created_on: str


class WorkOrderDetail(WorkOrderOut):
    variance: float | None = None
    requirements: list[dict[str, Any]]
    issues: list[dict[str, Any]]
    completions: list[dict[str, Any]]
    wip: float
    history: list[dict[str, Any]]
    links: dict[str, list[str]]


router = DomainRouter(tags=["manufacturing"])


@router.get("/work-orders", response_model=Envelope[Page[WorkOrderOut]],
            summary="List work orders (filters: status, item_id, source)")
def list_work_orders(status: str | None = None, item_id: str | None = None, source: str | None = None,
                     page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(work_orders).order_by(work_orders.c.id), page, status=status,
                                        item_id=item_id, source=source))


@router.get("/work-orders/{wo_id}", response_model=Envelope[WorkOrderDetail],
            summary="One work order with requirements, issues, completions, WIP and history")
def get_work_order(wo_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: wo_view(tx, wo_id), object_type="work_order", object_id=wo_id)


@router.post("/work-orders", operation_id="wo.create", status_code=201, response_model=Envelope[WorkOrderDetail],
             summary="Create a planned work order")
def post_work_order(body: WorkOrderIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_work_order(tx, body))


@router.post("/work-orders/{wo_id}/release", operation_id="wo.release", status_code=201,
             response_model=Envelope[WorkOrderDetail], summary="Release a planned order (components must be on hand)")
def post_release(wo_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_work_order(tx, wo_id))


@router.post("/work-orders/{wo_id}/issue", operation_id="wo.issue", status_code=201,
             response_model=Envelope[WorkOrderDetail],
             summary="Issue components (listed, or backflush the BOM for a number of units)")
def post_issue(wo_id: str, body: IssueIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: issue_components(tx, wo_id, body))


@router.post("/wo-issues/{issue_id}/reverse", operation_id="wo.reverse_issue", status_code=201,
             response_model=Envelope[WorkOrderDetail], summary="Reverse a component issue")
def post_reverse_issue(issue_id: str, body: WoNoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: reverse_issue(tx, issue_id, body))


@router.post("/work-orders/{wo_id}/complete", operation_id="wo.complete", status_code=201,
             response_model=Envelope[WorkOrderDetail], summary="Report finished units (no more than ordered)")
def post_complete(wo_id: str, body: CompleteIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: complete_work_order(tx, wo_id, body))


@router.post("/work-orders/{wo_id}/close", operation_id="wo.close", status_code=201,
             response_model=Envelope[WorkOrderDetail], summary="Close the order; remaining WIP posts as variance")
def post_close(wo_id: str, body: WoNoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: close_work_order(tx, wo_id, body))


@router.post("/work-orders/{wo_id}/cancel", operation_id="wo.cancel", status_code=201,
             response_model=Envelope[WorkOrderDetail], summary="Cancel an order with nothing issued")
def post_cancel(wo_id: str, body: WoNoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: cancel_work_order(tx, wo_id, body))
