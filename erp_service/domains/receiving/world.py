"""The world sections the scheduled receipts read: receipts and reversals posted on set days."""
from __future__ import annotations

from ...sim import SectionModel, WorldDate, world_section
from .schemas import ReceiptIn

# Scheduled receipts (world["receipts"], world["receipt_reversals"]) ---------------------------

class ScheduledReceipt(ReceiptIn):
    """``receipts[]``: a receipt the scenario posts on `date` as `user` (or `by`)."""

    date: WorldDate
    user: str | None = None
    by: str | None = None


class ScheduledReversal(SectionModel):
    """``receipt_reversals[]``: a receipt the scenario reverses on `date`."""

    date: WorldDate
    receipt_id: str
    user: str | None = None
    reason: str | None = None


world_section("receipts", list[ScheduledReceipt], owner=__name__, doc="receipts posted on set days")
world_section("receipt_reversals", list[ScheduledReversal], owner=__name__, doc="receipts reversed on set days")
