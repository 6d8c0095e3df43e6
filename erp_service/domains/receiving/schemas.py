"""Request bodies of the receiving routes."""
from __future__ import annotations

from pydantic import Field

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.money import Quantity
from .tables import REFUSAL_REASONS


class ReceiptLineIn(In):
    """What arrived (and what was refused) against one PO line."""

    po_line: int
    qty_received: Quantity = Field(0, ge=0)  # type: ignore[assignment]
    qty_refused: Quantity = Field(0, ge=0)  # type: ignore[assignment]
    refusal_reason: str | None = Field(None, description=" | ".join(REFUSAL_REASONS))
    item_id: str | None = Field(None, description="The item actually received when it differs from the PO line "
                                                  "(a substitution)")
    lot_no: str | None = Field(None, max_length=100)
    expiry: IsoDate | None = None
    location_id: str | None = None


class ReceiptIn(In):
    """A receipt against a sent purchase order."""

    po_id: str
    warehouse_id: str | None = None
    packing_slip: str | None = Field(None, max_length=100)
    note: str | None = Field(None, max_length=4000)
    lines: list[ReceiptLineIn] = Field(min_length=1, max_length=200)


class ReverseIn(In):
    """Why a receipt is reversed."""

    reason: str = Field(min_length=1, max_length=2000)
