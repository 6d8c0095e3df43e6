"""The base of every check model: name, required, cites, description, `{truth:…}` placeholders.

A check type is a pydantic model deriving from `CheckBase` with a `type: Literal["<name>"]`
field, in any module of the `tasks.checks` package; the package discovers it (no list to edit).
Its grader side is a function registered with `orchestrator.grading.checks.check_type`.
"""
from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError, field_validator, model_validator

CLAUSE_ID_RE = re.compile(r"^[A-Z]{2,5}-\d+(\.\d+)*$")
CHECK_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:()/+,'-]*$")
# A value filled from truth.json `values` at grading time.
TRUTH_PLACEHOLDER_RE = re.compile(r"^\{truth:[A-Za-z0-9_.-]+\}$")

KeySpec = str | list[str]


def _stand_in(annotation: Any) -> Any:
    """A value of `annotation`'s type to validate with while the real one waits for truth.json."""
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    candidates: tuple[Any, ...] = ("", 0, False, [], {})
    for candidate in candidates:
        try:
            adapter.validate_python(candidate)
            return candidate
        except ValidationError:
            continue
    return None


class CheckBase(BaseModel):
    """Fields every check has. Subclasses add `type: Literal[...]` and their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    required: bool = True
    cites: list[str] = Field(default_factory=list)
    description: str | None = None
    # Top-level fields given as a whole `{truth:key}` placeholder whose type is not text: they
    # validate with a stand-in now and are filled from truth.json when the grader runs.
    _truth_fields: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _truth_placeholders(cls, data: Any, handler: Any) -> Any:
        held: dict[str, str] = {}
        if isinstance(data, dict):
            data = dict(data)
            for key, value in list(data.items()):
                info = cls.model_fields.get(key)
                if info is None or info.annotation is None or not isinstance(value, str) or not TRUTH_PLACEHOLDER_RE.match(value):
                    continue
                try:
                    TypeAdapter(info.annotation).validate_python(value)
                    continue  # the field takes text: the placeholder stays in place
                except ValidationError:
                    held[key] = value
                    data[key] = _stand_in(info.annotation)
        model = handler(data)
        if held:
            model._truth_fields = held
        return model

    @property
    def truth_fields(self) -> dict[str, str]:
        """Fields to fill from truth.json before grading ({field: "{truth:key}"})."""
        return dict(self._truth_fields)

    @property
    def projections(self) -> list[str]:
        """Projections this check reads (the registry checks each exists in projections.sql)."""
        proj = getattr(self, "projection", None)
        return [proj] if isinstance(proj, str) else []

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not CHECK_NAME_RE.match(v):
            raise ValueError(f"check name {v!r} has characters outside [A-Za-z0-9 _.:()/+,'-]")
        return v

    @field_validator("cites")
    @classmethod
    def _cites_ok(cls, v: list[str]) -> list[str]:
        for cid in v:
            if not CLAUSE_ID_RE.match(cid):
                raise ValueError(f"{cid!r} is not a clause id (like PAY-2.1)")
        return v
