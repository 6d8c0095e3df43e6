"""The world sections purchasing's counterparties read: ``vendor_default``, ``vendors`` and
``approvers`` (see `actors` for how each field acts).

A vendor's profile is ``vendor_default`` overlaid with its own entry (nested objects merged
key by key), so every field is optional: absent means "as the default profile says", and the
actor's built-in default when neither says.
"""
from __future__ import annotations

from typing import Literal

from ...sim import SectionModel, WorldDate, world_section

#: A number for all items, or per item id ("*" = every other item).
PerItem = float | dict[str, float]


class PlantedLot(SectionModel):
    """A lot the vendor ships (in order; the last lot takes what is left)."""

    lot: str
    expiry: WorldDate | None = None
    share: float = 1.0


class InvoiceBehaviour(SectionModel):
    """How the vendor invoices what it shipped."""

    never: bool | None = None
    delay: int | None = None                      # workdays after shipping (default 2)
    prefix: str | None = None                     # invoice number prefix (default INV-)
    start: int | None = None                      # first invoice number (default 1001)
    price_overrides: dict[str, float] | None = None
    freight: float | None = None
    duplicate_after: int | None = None            # workdays after which a duplicate is sent
    duplicate_style: Literal["stripped", "suffix"] | None = None


class RequestAnswer(SectionModel):
    """How the vendor answers one kind of request."""

    accept: bool | None = None
    answer_delay: int | None = None
    best_days: int | None = None                  # expedite: earliest workdays from today
    credit: float | None = None                   # dispute: the credit (default: the billed excess)
    note: str | None = None


class RequestBehaviour(SectionModel):
    """How the vendor answers requests, by kind (``answer_delay`` for all kinds)."""

    answer_delay: int | None = None
    expedite: RequestAnswer | None = None
    defer: RequestAnswer | None = None
    cancel: RequestAnswer | None = None
    dispute: RequestAnswer | None = None
    copy_request: RequestAnswer | None = None


class VendorProfile(SectionModel):
    """How a vendor acknowledges, ships, invoices and answers."""

    silent: bool | None = None                    # does nothing at all
    ack_delay: int | None = None                  # workdays after sending (default 1)
    ship_early: bool | None = None
    lead_days: int | None = None                  # overrides the item's lead time
    moq_reject: bool | None = None
    price_notice: dict[str, float] | None = None
    fill: PerItem | None = None
    over_pct: PerItem | None = None
    round_to: float | None = None
    backorder: bool | None = None
    backorder_days: int | None = None
    substitutes: dict[str, str] | None = None
    lots: dict[str, list[PlantedLot]] | None = None
    invoice: InvoiceBehaviour | None = None
    requests: RequestBehaviour | None = None


Decision = Literal["approve", "reject", "return", "forward"]


class ApproverRule(SectionModel):
    """How a named approver decides requisitions waiting on them."""

    default: Decision = "approve"
    decisions: dict[str, Decision] = {}           # by requisition id
    over_limit: Decision = "return"               # above their approval limit
    max_amount: float | None = None               # their own lower threshold
    over_max: Decision = "return"
    require_note: bool = False
    note: str | None = None


world_section("vendor_default", VendorProfile, owner=__name__, doc="the profile every vendor starts from")
world_section("vendors", dict[str, VendorProfile], owner=__name__, doc="vendor profiles by vendor id")
world_section("approvers", dict[str, ApproverRule | None], owner=__name__,
              doc="requisition approvers that act, by user id")
