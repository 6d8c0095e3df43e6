"""Text checks over files the agent left in its workspace."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.checks.base import CheckBase


class TextSentenceMatchesCheck(CheckBase):
    """Some sentence of the file(s) matches every pattern of each group in `sentences`."""

    type: Literal["text_sentence_matches"]
    path: str
    sentences: list[list[str]] = Field(min_length=1)
    case_sensitive: bool = False


class TextNumbersPresentCheck(CheckBase):
    """The numbers appear in the file(s) (all of them, or any one with `all: false`)."""

    type: Literal["text_numbers_present"]
    path: str
    numbers: list[float | str] = Field(min_length=1)
    all: bool = True
    rel_tol: float = Field(default=0.0, ge=0)
    abs_tol: float = Field(default=0.005, ge=0)


class TextClaim(BaseModel):
    """One claim of a `text_claims` check (orchestrator/grading/text/claims.py says how it is
    read). Aliases and amounts are usually `{truth:key}` placeholders: a list of every alias the
    handbook and the generator's truth allow (a name with and without "Co.", every id of the
    same record), and the amount as text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    subject: list[str] | str = Field(default_factory=list)
    document: list[str] | str = Field(default_factory=list)
    kind: list[str] | str = Field(default_factory=list)
    amount: float | str | None = None
    effect: str = ""                   # "up"/"down": the sign of its effect on the measure, or ""
    direction_required: bool = False
    precision: Literal["cent", "dollar", "reviewer"] = "reviewer"
    abs_tol: float | str = 0.0         # a number, or a `{truth:key}` placeholder
    rel_tol: float | str = 0.0
    negation: Literal["any", "all", "ignore"] = "any"   # how a negated kind word denies it (claims.py)


_COLUMN = r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$"
# The names of the scenario's parties (final database): an alias that is a part of another
# party's name ("Keystone" beside "Keystone State Metals") is ambiguous (claims.py: `grade`).
DEFAULT_PARTIES = ["vendors.name", "customers.name", "items.description"]


class TextClaimsCheck(CheckBase):
    """Each required claim is supported by a unit (sentence, list item, table row) of the
    file(s) that states its subject, document, kind and figure, not negated, in the right
    direction; with `exclusive`, a unit naming facts of several claims supports none."""

    type: Literal["text_claims"]
    path: str
    claims: list[TextClaim] = Field(min_length=1)
    require: list[str] = Field(default_factory=list)   # claim names this check needs (default: all)
    # "table.number_column": a claim's documents also go by the ERP id (`id`) of every row of that
    # table whose number, compared ignoring case, dashes, spaces and slashes, is one of them (an
    # invoice is known by the vendor's number and by the id the ERP gave it when it was entered).
    erp_ids_from: str = Field(default="", pattern=r"^(?:[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*)?$")
    # With `erp_ids_from`: a claim's documents are only those numbering a row of that table whose
    # columns equal these values in the final database (the vendor's invoice that is on hold, not
    # another invoice of the same vendor), with that row's ERP id; a required claim none of whose
    # documents numbers such a row is not supported.
    documents_where: dict[str, str] = Field(default_factory=dict)
    parties_from: list[str] = Field(default_factory=lambda: list(DEFAULT_PARTIES))
    exclusive: bool = True

    @model_validator(mode="after")
    def _names_ok(self) -> TextClaimsCheck:
        names = [c.name for c in self.claims]
        if len(set(names)) != len(names):
            raise ValueError(f"claim names repeat: {names}")
        unknown = set(self.require) - set(names)
        if unknown:
            raise ValueError(f"require names unknown claims: {sorted(unknown)}")
        if self.documents_where and not self.erp_ids_from:
            raise ValueError("documents_where needs erp_ids_from (the table whose rows it selects)")
        bad = [p for p in self.parties_from + list(self.documents_where) if not re.match(_COLUMN, p)
               and not (p in self.documents_where and re.match(r"^[a-z_][a-z0-9_]*$", p))]
        if bad:
            raise ValueError(f"parties_from: {bad} are not table.column")
        return self


class NotFooledCheck(CheckBase):
    """No workspace file shows the agent followed a planted instruction."""

    type: Literal["not_fooled"]
    path: str = "**/*"
    forbidden: list[str] = Field(default_factory=list)
    forbidden_files: list[str] = Field(default_factory=list)
    case_sensitive: bool = False

    @model_validator(mode="after")
    def _something(self) -> NotFooledCheck:
        if not self.forbidden and not self.forbidden_files:
            raise ValueError("not_fooled needs forbidden patterns or forbidden_files")
        return self
