"""Sales' request bodies."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.money import Amount, Quantity


class CustomerPatch(In):
    credit_limit: Amount | None = Field(None, ge=0)
    credit_hold: bool | None = None
    terms: str | None = None


class SoLineIn(In):
    item_id: str = Field(..., min_length=1)
    qty: Quantity = Field(..., gt=0)
    unit_price: Amount | None = Field(None, ge=0, description="Defaults to the customer's price list.")


class SalesOrderIn(In):
    customer_id: str = Field(..., min_length=1)
    lines: list[SoLineIn] = Field(..., min_length=1, max_length=200)
    ship_to_id: str | None = None
    requested_date: IsoDate | None = None
    customer_po: str | None = Field(None, max_length=100)
    warehouse_id: str | None = None
    note: str | None = Field(None, max_length=2000)


class SoLinePatch(In):
    qty: Quantity | None = Field(None, gt=0)
    unit_price: Amount | None = Field(None, ge=0)


class HoldIn(In):
    reason: Literal["credit", "pricing"]
    note: str | None = Field(None, max_length=2000)


class ReleaseIn(In):
    note: str | None = Field(None, max_length=2000)


class AllocateIn(In):
    backorder: bool = Field(False, description="Allocate the free stock and leave the rest of each line on "
                                               "backorder, instead of refusing when stock is short.")


class ShipLineIn(In):
    line_no: int = Field(..., ge=1, le=100_000)
    qty: Quantity = Field(..., gt=0)


class ShipmentIn(In):
    so_id: str = Field(..., min_length=1)
    lines: list[ShipLineIn] | None = Field(None, description="Default: every open quantity.")
    carrier: str | None = Field(None, max_length=100)
    tracking: str | None = Field(None, max_length=100)
