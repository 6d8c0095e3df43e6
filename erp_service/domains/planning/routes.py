"""Planning response models and routes."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.dates import IsoDate
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from .schedule import OperationCancelIn, OperationIn, PromiseIn, add_operation, cancel_operation, list_operations, load, promise_order, promise_view
from .schemas import MrpRunIn, ReleaseIn
from .service import release_suggestion, run_mrp, run_view, suggestion_out
from .tables import forecasts, mrp_runs, mrp_suggestions

# Routes ----------------------------------------------------------------------------------------

class MrpRunOut(BaseModel):
    id: str
    status: str
    run_on: str
    horizon_weeks: int
    firm_days: int
    horizon_end: str
    suggestions: int
    created_by: str | None = None
    created_on: str
    by_kind: dict[str, int] = {}
    history: list[dict[str, Any]] = []
    links: dict[str, list[str]] = {}


class SuggestionOut(BaseModel):
    id: str
    run_id: str
    kind: str
    item_id: str
    qty: float
    due_date: str
    release_date: str
    vendor_id: str | None = None
    po_id: str | None = None
    po_line: int | None = None
    wo_id: str | None = None
    current_date: str | None = None
    firm: bool
    late: bool = False
    status: str
    released_doc: str | None = None
    released_by: str | None = None
    released_on: str | None = None
    note: str | None = None


class ForecastOut(BaseModel):
    item_id: str
    week_start: str
    qty: float


router = DomainRouter(tags=["planning"])


@router.post("/mrp/runs", operation_id="mrp.run", status_code=201, response_model=Envelope[MrpRunOut],
             summary="Run MRP (horizon_weeks default 8, firm_days default 5); earlier open suggestions are superseded")
def post_mrp_run(body: MrpRunIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: run_mrp(tx, body or MrpRunIn()))


@router.get("/mrp/runs", response_model=Envelope[Page[MrpRunOut]], summary="MRP runs, newest first")
def list_mrp_runs(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        listed = paginate(tx, select(mrp_runs.c.id).order_by(mrp_runs.c.id.desc()), page)
        listed["items"] = [run_view(tx, r["id"]) for r in listed["items"]]
        return listed
    return api.read(fn)


@router.get("/mrp/suggestions", response_model=Envelope[Page[SuggestionOut]],
            summary="Suggestions of a run (default: the latest; filters: kind, item_id, firm, status)")
def list_suggestions(run_id: str | None = None, kind: str | None = None, item_id: str | None = None,
                     firm: bool | None = None, status: str | None = None, page: PageRequest = Depends(page_params),
                     api: Api = Depends(read_api)):
    def fn(tx: Tx):
        rid = run_id or tx.scalar(select(mrp_runs.c.id).order_by(mrp_runs.c.id.desc()))
        return paginate(tx, select(mrp_suggestions).order_by(mrp_suggestions.c.id), page, render=suggestion_out,
                        run_id=rid or "", kind=kind, item_id=item_id,
                        firm=None if firm is None else int(firm), status=status)
    return api.read(fn)


@router.post("/mrp/suggestions/{sug_id}/release", operation_id="mrp.release", status_code=201,
             response_model=Envelope[SuggestionOut],
             summary="Release a suggestion: planned PO → created and sent PO; planned WO → planned work order; "
                     "expedite/defer/cancel → vendor request")
def post_release(sug_id: str, body: ReleaseIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_suggestion(tx, sug_id, body))


@router.get("/forecasts", response_model=Envelope[Page[ForecastOut]], summary="Demand forecasts by item and week")
def list_forecasts(item_id: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(forecasts).order_by(forecasts.c.item_id, forecasts.c.week_start),
                                        page, item_id=item_id))


# Finite scheduling and order promising (planning/schedule.py) ---------------------------------

class OperationOut(BaseModel):
    id: str
    status: str
    wo_id: str
    step: int
    work_center_id: str
    day: str
    hours: float
    note: str | None = None
    created_by: str | None = None
    created_on: str
    history: list[dict[str, Any]] = []
    links: dict[str, list[str]] = {}


class LoadOut(BaseModel):
    work_center_id: str
    day: str
    capacity_hours: float
    booked_hours: float
    free_hours: float


class PromiseOut(BaseModel):
    so_id: str
    promise_date: str | None = None
    promised_by: str | None = None
    promised_on: str | None = None
    note: str | None = None


@router.post("/work-orders/{wo_id}/operations", operation_id="wo.schedule", status_code=201,
             response_model=Envelope[OperationOut],
             summary="Book hours of one routing step of a planned or released work order on one working day "
                     "(the work order's start and due dates follow its bookings)")
def post_operation(wo_id: str, body: OperationIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: add_operation(tx, wo_id, body))


@router.post("/wo-operations/{op_id}/cancel", operation_id="wo.unschedule", status_code=201,
             response_model=Envelope[OperationOut], summary="Cancel a work-order operation booking")
def post_operation_cancel(op_id: str, body: OperationCancelIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: cancel_operation(tx, op_id, body))


@router.get("/wo-operations", response_model=Envelope[Page[OperationOut]],
            summary="Work-order operation bookings by day (filters: wo_id, work_center_id, date_from, date_to, "
                    "status; default status scheduled)")
def get_operations(wo_id: str | None = None, work_center_id: str | None = None, date_from: IsoDate | None = None,
                   date_to: IsoDate | None = None, status: str = "scheduled",
                   page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        rows = list_operations(tx, wo_id=wo_id, work_center_id=work_center_id,
                               date_from=date_from.isoformat() if date_from else None,
                               date_to=date_to.isoformat() if date_to else None, status=status)
        return {"items": rows[page.offset:page.offset + page.limit], "total": len(rows), "offset": page.offset,
                "limit": page.limit}
    return api.read(fn)


@router.get("/work-centers/load", response_model=Envelope[list[LoadOut]],
            summary="Booked hours beside daily capacity, per work centre and working day (at most 92 days)")
def get_load(date_from: IsoDate, date_to: IsoDate, api: Api = Depends(read_api)):
    return api.read(lambda tx: load(tx, date_from.isoformat(), date_to.isoformat()))


@router.post("/sales-orders/{so_id}/promise", operation_id="so.promise", status_code=201,
             response_model=Envelope[PromiseOut],
             summary="Promise the customer a ship date on an open sales order (replaces an earlier promise)")
def post_promise(so_id: str, body: PromiseIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: promise_order(tx, so_id, body))


@router.get("/sales-orders/{so_id}/promise", response_model=Envelope[PromiseOut],
            summary="The ship date promised on a sales order (null when none)")
def get_promise(so_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: promise_view(tx, so_id))
