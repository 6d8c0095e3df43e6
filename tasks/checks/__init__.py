"""Check models of task.yaml, discovered: every `CheckBase` subclass with a `type` literal in
any module of this package is a check type (adding one never edits a list).

`CHECK_MODELS` maps type name to model; `Check` is the discriminated union `TaskSpec.checks`
validates against; `CHECK_TYPES` lists the names. The grader side registers one function per
type (`orchestrator.grading.checks`); a test checks the two sides name the same types.
"""
from __future__ import annotations

import importlib
import pkgutil
import typing
from typing import Annotated, Union

from pydantic import Field

from tasks.checks.base import CheckBase, KeySpec


def _discover() -> dict[str, type[CheckBase]]:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    found: dict[str, type[CheckBase]] = {}
    todo = list(CheckBase.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        field = cls.model_fields.get("type")
        args = typing.get_args(field.annotation) if field is not None else ()
        if len(args) != 1 or not isinstance(args[0], str):
            continue  # an abstract helper base, not a check type
        if args[0] in found and found[args[0]] is not cls:
            raise TypeError(f"check type {args[0]!r} is defined twice: {found[args[0]].__module__} and {cls.__module__}")
        found[args[0]] = cls
    return dict(sorted(found.items()))


CHECK_MODELS: dict[str, type[CheckBase]] = _discover()
CHECK_TYPES: list[str] = list(CHECK_MODELS)
# The union is built at run time from what was discovered; type checkers see the base class.
if typing.TYPE_CHECKING:
    Check = CheckBase
else:
    Check = Annotated[Union[tuple(CHECK_MODELS.values())], Field(discriminator="type")]  # noqa: UP007


def check_model(type_name: str) -> type[CheckBase]:
    """The model of check type `type_name`; KeyError listing the known types."""
    try:
        return CHECK_MODELS[type_name]
    except KeyError:
        raise KeyError(f"unknown check type {type_name!r} (known: {', '.join(CHECK_TYPES)})") from None


__all__ = ["CHECK_MODELS", "CHECK_TYPES", "Check", "CheckBase", "KeySpec", "check_model"]
