"""Request bodies of the vendor routes."""
from __future__ import annotations

import re

from pydantic import Field, field_validator

from ...http.api import In


class VendorIn(In):
    """A new vendor."""

    id: str | None = Field(None, pattern=r"^V-\d{4,6}$", description="Leave out to number it automatically.")
    name: str = Field(min_length=1, max_length=200)
    terms: str = "NET30"
    tin: str | None = Field(None, max_length=40)
    email: str | None = Field(None, max_length=200)
    phone: str | None = Field(None, max_length=40)
    address: str | None = Field(None, max_length=500)
    contact: str | None = Field(None, max_length=200)
    quality_hold: bool = False
    default_account: str | None = None


class VendorPatch(In):
    """Fields of a vendor that may change (bank details change only through bank-account requests)."""

    name: str | None = Field(None, min_length=1, max_length=200)
    status: str | None = Field(None, pattern="^(active|inactive)$")
    terms: str | None = None
    tin: str | None = Field(None, max_length=40)
    email: str | None = Field(None, max_length=200)
    phone: str | None = Field(None, max_length=40)
    address: str | None = Field(None, max_length=500)
    contact: str | None = Field(None, max_length=200)
    quality_hold: bool | None = None
    default_account: str | None = None


class BankAccountIn(In):
    """A requested change of remit bank details (enters as pending)."""

    bank_name: str = Field(min_length=1, max_length=200)
    account_name: str | None = Field(None, max_length=200)
    account_number: str = Field(description="4 to 17 digits.")
    routing_number: str = Field(description="9 digits (ABA).")
    source_ref: str | None = Field(None, max_length=100, description="Where the request came from, e.g. a message id.")
    note: str | None = Field(None, max_length=2000)

    @field_validator("account_number")
    @classmethod
    def _acct(cls, v: str) -> str:
        v = v.replace(" ", "").replace("-", "")
        if not re.fullmatch(r"\d{4,17}", v):
            raise ValueError("account_number must be 4 to 17 digits")
        return v

    @field_validator("routing_number")
    @classmethod
    def _routing(cls, v: str) -> str:
        v = v.replace(" ", "").replace("-", "")
        if not re.fullmatch(r"\d{9}", v):
            raise ValueError("routing_number must be 9 digits")
        return v


class DecisionIn(In):
    """An optional note with a verify/reject/withdraw decision."""
    # Another domain has a model of this name, so /openapi.json names this one by its module: keep the
    # name it had before the domain became a package.
    __module__ = "erp_service.domains.vendors"

    note: str | None = Field(None, max_length=2000)
