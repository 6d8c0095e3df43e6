"""Comms' request bodies."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ...http.api import In
from .tables import DispositionCode, ReasonCode


class DispositionIn(In):
    disposition: DispositionCode
    ref: str | None = Field(None, max_length=200, description="The record this message became or duplicates.")
    note: str | None = Field(None, max_length=20_000)
    to: str | list[str] | None = Field(None, description="For `forwarded`: where it was forwarded.")


class OutboxIn(In):
    to: str | list[str] = Field(..., description="Staff user ids or email addresses (comma-separated or a list).")
    cc: str | list[str] | None = None
    subject: str = Field(..., min_length=1, max_length=500)
    body: str = Field(..., max_length=50_000)
    box: str | None = Field(None, description="Send from a box address you hold (e.g. ap).")
    in_reply_to: str | None = Field(None, description="Message id this replies to (joins its thread).")
    related_type: str | None = None
    related_id: str | None = None


class EscalationIn(In):
    record_type: str = Field(..., min_length=1, description="Object type, e.g. ap_invoice, vendor_bank_account.")
    record_id: str = Field(..., min_length=1)
    to: str = Field(..., min_length=1, description="User id of the person escalated to.")
    reason: ReasonCode
    note: str | None = Field(None, max_length=20_000)


class CallIn(In):
    party_type: Literal["vendor", "customer", "user"]
    party_id: str = Field(..., min_length=1)
    number: str | None = Field(None, max_length=40, description="Number to dial; defaults to the one on file.")
    purpose: str | None = Field(None, max_length=2000)

    @field_validator("number")
    @classmethod
    def _strip(cls, v: str | None) -> str | None:
        return v.strip() if v is not None and v.strip() else None
