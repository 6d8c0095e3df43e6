"""Text checks over files the agent left in its workspace."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

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
