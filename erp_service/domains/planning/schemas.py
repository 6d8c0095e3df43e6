"""Request bodies of the planning routes.

No `from __future__ import annotations` here: `ReleaseIn` names another module as its own (see
there), so its annotations must be evaluated here, not looked up later in that module."""

from pydantic import Field

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.money import Quantity


class MrpRunIn(In):
    """Run MRP over a horizon."""

    horizon_weeks: int = Field(8, ge=1, le=52)
    firm_days: int = Field(5, ge=0, le=90)


class ReleaseIn(In):
    """Override a suggestion's quantity, date or vendor when releasing it."""
    # Another domain has a model of this name, so /openapi.json names this one by its module: keep the
    # name it had before the domain became a package.
    __module__ = "erp_service.domains.planning"

    qty: Quantity | None = Field(None, gt=0)
    due_date: IsoDate | None = None
    vendor_id: str | None = None
