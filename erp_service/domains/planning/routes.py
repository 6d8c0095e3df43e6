"""Planning response models and routes."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
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
