"""The typed world file (``world.json``): one pydantic model, `World`, assembled from the
sections the domains declare with `sim.world_section` — each domain owns the models of the
sections its actors read, so adding a section never edits this module.

A generator builds a world by constructing the section models and the aggregate::

    from erp_service.world import World
    from erp_service.domains.comms import CallScript
    world = World(calls=[CallScript(party_type="vendor", party_id="V-0102", transcript="...")])
    world.agent_users = ["hannah.brooks"]            # assignment is validated too
    text = world_json(world)                         # what world.json holds

Only what was set is written (`exclude_unset`), so a file round-trips to the same JSON. The
server validates the file at start (`load_world`) and refuses an unknown section or field with
`WorldError`, whose message names it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from . import domains  # noqa: F401  (importing the domains declares their world sections)
from .sim import WORLD_SECTIONS
from .sim import World as ActorWorld


class WorldError(ValueError):
    """The world file is unreadable or does not match the declared sections."""


class WorldBase(BaseModel):
    """Base of the aggregate: unknown sections are refused, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    if TYPE_CHECKING:  # the sections are fields added from the registry at import time
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...  # assignment is validated at run time


def _build() -> type[WorldBase]:
    fields: dict[str, Any] = {name: (sec.annotation | None, None) for name, sec in sorted(WORLD_SECTIONS.items())}
    model: type[WorldBase] = create_model("World", __base__=WorldBase, __module__=__name__, **fields)
    model.__doc__ = "The world file: " + "; ".join(
        f"`{name}` ({sec.owner.removeprefix('erp_service.')}): {sec.doc}" for name, sec in sorted(WORLD_SECTIONS.items()))
    return model


#: The typed world file. Fields: one per declared section, each optional (absent = the actor's
#: defaults).
World: type[WorldBase] = _build()


def _type_names(annotation: Any, seen: set[str]) -> set[str]:
    """Names pydantic may put into an error location for a union member under `annotation`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.__name__ not in seen:
            seen.add(annotation.__name__)
            for f in annotation.model_fields.values():
                _type_names(f.annotation, seen)
    else:
        for arg in get_args(annotation):
            _type_names(arg, seen)
    return seen


#: Union-member tags in error locations (``float``, ``EscalationRules``, ``list[...]``).
_TAGS = _type_names(World, {"str", "int", "float", "bool"})


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe(exc: ValidationError, source: str = "world.json") -> str:
    """One line naming every offending section or field. Within a section, unknown fields are
    reported alone: a union (``escalations``: a list or ``{"rules": ...}``) otherwise adds a
    second, unhelpful complaint from the member that did not apply."""
    errors = []
    for err in exc.errors():
        # Unions add the member type's name to the location; drop those for readability.
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in _TAGS)))
        errors.append((loc, err))
    unknown_in = {loc[0] for loc, err in errors if err["type"] == "extra_forbidden"}
    parts = []
    for loc, err in errors:
        if loc and loc[0] in unknown_in and err["type"] != "extra_forbidden":
            continue
        if err["type"] == "extra_forbidden":
            if len(loc) == 1:
                known = ", ".join(sorted(WORLD_SECTIONS))
                parts.append(f"unknown section {loc[0]!r} (known: {known})")
            else:
                parts.append(f"unknown field {loc[-1]!r} in {_where(loc[:-1])}")
        else:
            parts.append(f"{_where(loc) or 'top level'}: {err['msg']}")
    return f"{source}: " + "; ".join(dict.fromkeys(parts))


def parse_world(data: Any, source: str = "world.json") -> WorldBase:
    """Validate world data (parsed JSON); raises WorldError naming what is wrong."""
    if not isinstance(data, dict):
        raise WorldError(f"{source}: expected a JSON object of sections, got {type(data).__name__}")
    try:
        return World.model_validate(data)
    except ValidationError as exc:
        raise WorldError(describe(exc, source)) from None


def world_data(world: WorldBase) -> dict[str, Any]:
    """The world as JSON data: only what was set (a parsed file round-trips)."""
    return world.model_dump(mode="json", exclude_unset=True, by_alias=True)


def world_json(world: WorldBase) -> str:
    """The text of world.json (sorted keys, one-space indent, as the generators write it)."""
    return json.dumps(world_data(world), indent=1, sort_keys=True) + "\n"


def load_world(path: str | Path | None) -> ActorWorld:
    """Read and validate world.json into what the actors read (no path: an empty world)."""
    if path is None:
        return ActorWorld({})
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise WorldError(f"{p.name}: cannot read: {exc}") from None
    parse_world(data, p.name)
    # The actors read the file's own data (validated above), so validation changes nothing
    # they see (no coercion of 5 to 5.0, no defaults filled in).
    return ActorWorld(data)
