"""The report registry: every report's parameters model, `register_report`, and running one
report against its validated parameters."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ...kernel.dates import IsoDate
from ...kernel.errors import invalid, not_found
from ...kernel.tx import Tx


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
