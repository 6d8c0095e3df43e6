"""The ERP's reports: the list, and one report run with the parameters of its form."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from erp_web import views
from erp_web.deps import Client, Web

router = APIRouter()


@router.get("/reports", response_class=HTMLResponse)
def reports(request: Request, web: Web, c: Client) -> HTMLResponse:
    res = c.get("/reports")
    return web.render(request, "reports.html", client=c, reports=res.data if res.ok else [], error=None if res.ok else res.message)


@router.get("/reports/{report_id}", response_class=HTMLResponse)
def report(request: Request, report_id: str, web: Web, c: Client) -> HTMLResponse:
    listing_ = c.get("/reports")
    info = next((r for r in (listing_.data or []) if r.get("id") == report_id), {"id": report_id, "title": report_id, "params": []})
    params = {p: request.query_params.get(p, "") for p in info.get("params", [])}
    res = c.get(f"/reports/{quote(report_id, safe='')}", **params)
    data = res.data if res.ok else {}
    rows: list[dict[str, Any]] = []
    if isinstance(data, dict):  # `rows`, or a report's own name for them (cash-position: `accounts`)
        rows = data.get("rows") or next((v for v in data.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)), [])
    elif isinstance(data, list):
        rows = [r for r in data if isinstance(r, dict)]
    return web.render(request, "report.html", client=c, info=info, params=params, data=data, rows=rows,
                      columns=views.columns_of(rows, limit=14), error=None if res.ok else res.message)
