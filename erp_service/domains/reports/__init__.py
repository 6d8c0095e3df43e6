"""Reports: a small registry every domain adds to, and the two routes that serve it.

    from ..reports import register_report

    class GrniParams(ReportParams):
        as_of: IsoDate | None = None

    register_report("grni", grni_report, GrniParams, title="Goods received not invoiced")

A report function takes ``(tx, params)`` (params: an instance of the declared model, whose
unknown fields are a 422) and returns a JSON-able dict. `GET /reports` lists the registered ids;
`GET /reports/{id}?k=v` runs one. The ledger reports (trial-balance, control-ties,
budget-vs-actual) live here because they depend only on the ledger core; ap-aging is
registered by `payables`, cash-position by `banking`.

`service` holds the registry, `ledger_reports` the ledger's three reports, `routes` the
response models and the router.
"""
from __future__ import annotations

from . import ledger_reports  # noqa: F401  (the ledger's reports, registered first)
from .routes import router
from .service import REPORTS, AsOfParams, Report, ReportFn, ReportParams, as_of_of, register_report, run_report

__all__ = ["REPORTS", "router", "AsOfParams", "Report", "ReportFn", "ReportParams", "as_of_of", "register_report", "run_report"]
