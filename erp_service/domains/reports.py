"""Reports: a small registry every domain adds to, and the two routes that serve it.

    from .reports import register_report

    class GrniParams(ReportParams):
        as_of: IsoDate | None = None

    register_report("grni", grni_report, GrniParams, title="Goods received not invoiced")

A report function takes ``(tx, params)`` (params: an instance of the declared model, whose
unknown fields are a 422) and returns a JSON-able dict. `GET /reports` lists the registered ids;
`GET /reports/{id}?k=v` runs one. The ledger reports (trial-balance, control-ties,
budget-vs-actual) live here because they depend only on the ledger core; ap-aging is
registered by `payables`, cash-position by `banking`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request
from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import func, select

from ..http.api import Api, Envelope, read_api
from ..http.lazy_routes import DomainRouter
from ..kernel.dates import IsoDate
from ..kernel.errors import invalid, not_found
from ..kernel.money import from_cents
from ..kernel.tx import Tx
from . import ledger


class ReportParams(BaseModel):
    """Base of every report's query parameters: unknown parameters are refused (422)."""

    model_config = ConfigDict(extra="forbid")


class AsOfParams(ReportParams):
    """The common parameter: the date the report is taken at (default: the business date)."""

    as_of: IsoDate | None = None


ReportFn = Callable[[Tx, Any], dict]


@dataclass(frozen=True)
class Report:
    """One registered report."""

    id: str
    title: str
    fn: ReportFn
    params: type[ReportParams]


REPORTS: dict[str, Report] = {}


def register_report(report_id: str, fn: ReportFn, params: type[ReportParams] = AsOfParams,
                    *, title: str | None = None) -> None:
    """Register (or replace) report `report_id`, served at ``GET /reports/{report_id}``."""
    REPORTS[report_id] = Report(report_id, title or report_id.replace("-", " ").capitalize(), fn, params)


def as_of_of(tx: Tx, params: Any) -> str:
    """The report date: the `as_of` parameter, or the business date."""
    value = getattr(params, "as_of", None)
    return value.isoformat() if value else tx.business_date


def run_report(tx: Tx, report_id: str, query: dict[str, Any]) -> dict:
    """Validate `query` against the report's parameters and run it."""
    report = REPORTS.get(report_id)
    if report is None:
        raise not_found("report", report_id)
    try:
        params = report.params(**query)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "query"
        raise invalid(f"{where}: {first.get('msg', 'invalid value')}.") from None
    data = report.fn(tx, params)
    return {"report": report_id, "title": report.title,
            "params": params.model_dump(mode="json", exclude_none=True), **data}


# Ledger reports --------------------------------------------------------------------------------

def trial_balance_report(tx: Tx, params: AsOfParams) -> dict:
    """Balances per account as of a date, with totals and whether they balance."""
    return ledger.trial_balance(tx.conn, as_of_of(tx, params))


def control_ties_report(tx: Tx, params: AsOfParams) -> dict:
    """Each control account beside its subledger."""
    as_of = as_of_of(tx, params)
    rows = ledger.control_ties(tx.conn, as_of)
    return {"as_of": as_of, "rows": rows, "all_tied": all(r["tied"] for r in rows)}


class BudgetParams(ReportParams):
    """budget-vs-actual: one period (default: the business date's) or a range of periods."""

    period: str | None = None
    period_from: str | None = None
    period_to: str | None = None
    department: str | None = None


def budget_vs_actual_report(tx: Tx, params: BudgetParams) -> dict:
    """Budget per department and account beside the account's posted activity in the periods.

    Journal lines carry no department, so `actual` is the account's whole activity (debit
    positive); an account budgeted by two departments shows the same actual on both rows."""
    if params.period and (params.period_from or params.period_to):
        raise invalid("Give either period or period_from/period_to, not both.")
    if params.period:
        first = last = params.period
    elif params.period_from or params.period_to:
        first = params.period_from or params.period_to  # type: ignore[assignment]
        last = params.period_to or params.period_from  # type: ignore[assignment]
    else:
        first = last = tx.business_date[:7]
    pers = tx.all(select(ledger.periods).where(ledger.periods.c.id >= first, ledger.periods.c.id <= last)
                  .order_by(ledger.periods.c.id))
    if not pers:
        raise invalid(f"No periods between {first} and {last}.")
    start, end = pers[0]["start_date"], pers[-1]["end_date"]
    b = ledger.budgets
    stmt = (select(b.c.department_id, b.c.account_id, func.sum(b.c.amount_cents))
            .where(b.c.period_id >= first, b.c.period_id <= last)
            .group_by(b.c.department_id, b.c.account_id).order_by(b.c.department_id, b.c.account_id))
    if params.department:
        stmt = stmt.where(b.c.department_id == params.department)
    jl, je = ledger.journal_lines, ledger.journal_entries
    actual = {a: int(v or 0) for a, v in tx.conn.execute(
        select(jl.c.account_id, func.sum(jl.c.debit_cents - jl.c.credit_cents))
        .join(je, je.c.id == jl.c.entry_id)
        .where(je.c.status.in_(("posted", "reversed")), je.c.entry_date >= start, je.c.entry_date <= end)
        .group_by(jl.c.account_id))}
    names = {r["id"]: r["name"] for r in tx.rows(ledger.accounts)}
    rows = []
    for dept, acct, budget in tx.conn.execute(stmt):
        act = actual.get(acct, 0)
        rows.append({"department": dept, "account": acct, "name": names.get(acct), "budget": from_cents(budget),
                     "actual": from_cents(act), "variance": from_cents(int(budget or 0) - act)})
    return {"period_from": first, "period_to": last, "rows": rows}


register_report("trial-balance", trial_balance_report, AsOfParams, title="Trial balance")
register_report("control-ties", control_ties_report, AsOfParams, title="Control accounts against subledgers")
register_report("budget-vs-actual", budget_vs_actual_report, BudgetParams, title="Budget against actual")


# Routes ----------------------------------------------------------------------------------------

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
