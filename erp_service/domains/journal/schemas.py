"""Request bodies of the journal routes."""
from __future__ import annotations

from pydantic import Field, model_validator

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.money import Amount


class JournalLineIn(In):
    account: str
    debit: Amount = Field(0, ge=0)  # type: ignore[assignment]
    credit: Amount = Field(0, ge=0)  # type: ignore[assignment]
    memo: str | None = Field(None, max_length=500)

    @model_validator(mode="after")
    def _one_side(self):
        if (self.debit > 0) == (self.credit > 0):
            raise ValueError("each line has either a debit or a credit")
        return self


class JournalEntryIn(In):
    entry_date: IsoDate
    memo: str = Field(min_length=1, max_length=2000)
    lines: list[JournalLineIn] = Field(min_length=2, max_length=200)


class LinesIn(In):
    lines: list[JournalLineIn] = Field(min_length=2, max_length=200)


class AttachmentIn(In):
    filename: str = Field(min_length=1, max_length=200)
    content_type: str = Field("application/pdf", max_length=100)
    content_base64: str = Field(min_length=1)


class NoteIn(In):
    # Another domain has a model of this name, so /openapi.json names this one by its module: keep the
    # name it had before the domain became a package.
    __module__ = "erp_service.domains.journal"
    note: str | None = Field(None, max_length=2000)
