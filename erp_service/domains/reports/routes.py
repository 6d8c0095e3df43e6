"""Report response models and the two routes that serve the registry (`/reports`,
`/reports/{report_id}`)."""
from __future__ import annotations

from typing import Any

from fastapi import Depends, Request
from pydantic import BaseModel, ConfigDict

from ...http.api import Api, Envelope, read_api
from ...http.lazy_routes import DomainRouter
from .service import REPORTS, run_report


class ReportInfo(BaseModel):
    id: str
    title: str
    params: list[str]


class ReportOut(BaseModel):
    """One report's result: its id, title and the parameters it ran with, then the report's own
    fields (`as_of`, `rows`, totals...; see each report's description in GET /reports)."""

    model_config = ConfigDict(extra="allow")
    report: str
    title: str
    params: dict[str, Any]


router = DomainRouter(tags=["reports"])


@router.get("/reports", response_model=Envelope[list[ReportInfo]], summary="List the report ids and their parameters")
def list_reports(api: Api = Depends(read_api)):
    return api.read(lambda tx: [{"id": r.id, "title": r.title, "params": list(r.params.model_fields)}
                                for r in sorted(REPORTS.values(), key=lambda r: r.id)])


@router.get("/reports/{report_id}", response_model=Envelope[ReportOut],
            summary="Run one report; parameters as query strings (see GET /reports)")
def get_report(report_id: str, request: Request, api: Api = Depends(read_api)):
    query = {k: v for k, v in request.query_params.items()}
    return api.read(lambda tx: run_report(tx, report_id, query), object_type="report", object_id=report_id)
