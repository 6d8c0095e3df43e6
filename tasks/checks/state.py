"""State checks: the agent's projections against the reference, and tables left unchanged."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tasks.checks.base import CheckBase, KeySpec


class StateSetCheck(CheckBase):
    """The set of keys in the agent's projection equals the reference set."""

    type: Literal["state_set"]
    projection: str
    key: KeySpec
    normalize: bool = True


class StateValuesCheck(CheckBase):
    """Per-key values of `columns` match the reference (csv_values_match semantics)."""

    type: Literal["state_values"]
    projection: str
    key: KeySpec
    columns: list[str] = Field(min_length=1)
    # True: every column numeric; a list: those columns only.
    numeric: bool | list[str] = False
    tolerance: float = Field(default=0.0, ge=0)
    normalize: bool = True
    min_accuracy: float = Field(default=1.0, ge=0, le=1)
    must_match_keys: bool = False


class StateUnchangedCheck(CheckBase):
    """Rows of `tables` (optionally restricted by `where`) equal the start state."""

    type: Literal["state_unchanged"]
    tables: list[str] = Field(min_length=1)
    where: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _where_tables(self) -> StateUnchangedCheck:
        extra = sorted(set(self.where) - set(self.tables))
        if extra:
            raise ValueError(f"where names tables not in tables: {extra}")
        return self
