"""The world sections the customer actor reads: how each customer pays and what it orders."""
from __future__ import annotations

from typing import Literal

from ...sim import SectionModel, WorldDate, world_section


class OrderLine(SectionModel):
    """One line of a customer's scheduled order."""

    item_id: str
    qty: float


class CustomerOrder(SectionModel):
    """A purchase order the customer emails (with a PDF) on the first workday on or after `on`."""

    on: WorldDate
    customer_po: str | None = None
    box: str = "sales"
    lines: list[OrderLine] = []


class CustomerProfile(SectionModel):
    """How a customer pays (and what it orders); see the module docstring."""

    pays: Literal["on_time", "late", "short", "never"] = "on_time"
    days_late: int = 15
    short_pct: float = 5.0
    short_reason: str | None = None
    reference: str = "invoice"          # invoice | po | wrong | literal text
    payer: str | None = None
    orders: list[CustomerOrder] = []


world_section("customers", dict[str, CustomerProfile], owner=__name__, doc="customer profiles by customer id")


world_section("customer_default", CustomerProfile, owner=__name__, doc="the profile of customers without one")
