"""Request bodies of the transfer and adjustment routes."""
from __future__ import annotations

from pydantic import Field

from ...http.api import In
from ...kernel.money import Quantity


class TransferIn(In):
    """Move stock between locations or warehouses."""

    item_id: str
    qty: Quantity = Field(gt=0)
    from_warehouse: str
    from_location: str | None = None
    to_warehouse: str
    to_location: str | None = None
    lot_no: str | None = None
    note: str | None = Field(None, max_length=2000)


class AdjustmentIn(In):
    """Correct on-hand after a count, damage or expiry (qty is the signed change)."""

    item_id: str
    warehouse_id: str
    location_id: str | None = None
    lot_no: str | None = None
    qty: Quantity
    reason: str = Field(description="count | damage | expired | found | scrap | quality | other")
    note: str | None = Field(None, max_length=2000)
    expiry: str | None = Field(None, description="Expiry of a new lot found in a count (YYYY-MM-DD)")


class DecisionIn(In):
    """An approver's note on a pending adjustment."""

    note: str | None = Field(None, max_length=2000)
