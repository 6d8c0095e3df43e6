"""Request bodies of the work-order routes."""
from __future__ import annotations

from pydantic import Field

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.money import Quantity


class WorkOrderIn(In):
    """A planned work order for a made item."""

    item_id: str
    qty: Quantity = Field(gt=0)
    due_date: IsoDate
    start_date: IsoDate | None = None
    warehouse_id: str | None = None
    location_id: str | None = None
    note: str | None = Field(None, max_length=2000)


class IssueLineIn(In):
    """One component to issue; without location/lot, stock is picked first-expiry-first."""

    item_id: str
    qty: Quantity = Field(gt=0)
    location_id: str | None = None
    lot_no: str | None = None


class IssueIn(In):
    """Issue listed components, or backflush the BOM for a number of units."""

    lines: list[IssueLineIn] = Field(default_factory=list, max_length=200)
    backflush_units: Quantity | None = Field(None, gt=0)


class CompleteIn(In):
    """Finished units reported on a work order."""

    qty: Quantity = Field(gt=0)
    location_id: str | None = None
    lot_no: str | None = Field(None, max_length=100)
    expiry: IsoDate | None = None


class WoNoteIn(In):
    """An optional note."""

    note: str | None = Field(None, max_length=2000)
