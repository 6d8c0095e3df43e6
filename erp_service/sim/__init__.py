"""The counterparties and the clock.

The business date moves only through `advance` (the host's /control/advance, or a generator).
Each new day runs in one transaction: the date changes, then, on workdays, the actors run in
the fixed order bank, vendors, customers, warehouse, approvers, managers. Each action is an
ordinary audited write as the actor's user (channel ``sim``); a refusal is audited and the day
goes on. Anything else that fails rolls the whole day back and `advance` raises
`AdvanceError` naming the day — no partial day is ever committed.

Domain modules register actors with `@actor("vendors")`; behaviour comes from the scenario's
world file (`World`), never from free text the agent wrote. Each world section an actor reads
is registered here by the domain that reads it (`world_section`); `erp_service.world` builds
the typed model of the whole file from these registrations and validates the file with it.
"""
from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints
from sqlalchemy import Column, Integer, String, Table, Text

from ..kernel import pipeline
from ..kernel.clock import set_business_date
from ..kernel.db import Database
from ..kernel.errors import Problem
from ..kernel.identity import Actor, load_actor
from ..kernel.schema import metadata
from ..kernel.tx import Tx
from ..logs import get_logger

log = get_logger(__name__)

ACTOR_ORDER = ("bank", "vendors", "customers", "warehouse", "approvers", "managers")

#: What counterparties sent (documents, shipments): the grader compares agent entries to it.
sim_log = Table(
    "sim_log", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("day", String, nullable=False),
    Column("actor", String, nullable=False),
    Column("kind", String, nullable=False),
    Column("ref", String),
    Column("payload", Text),
)


class AdvanceError(RuntimeError):
    """A day failed; nothing of that day was committed."""

    def __init__(self, day: str, reason: str) -> None:
        super().__init__(f"advance failed on {day}: {reason}")
        self.day = day
        self.reason = reason


@dataclass(frozen=True)
class WorldSection:
    """One registered top-level section of the world file: its name, the type of its value
    (a pydantic model, or a list/dict of them) and the module that reads it."""

    name: str
    annotation: Any
    owner: str
    doc: str


#: Every world section an actor reads, by name (filled by the domains at import).
WORLD_SECTIONS: dict[str, WorldSection] = {}


def world_section(name: str, annotation: Any, *, owner: str, doc: str = "") -> None:
    """Declare a top-level world section and the type of its value. The domain whose actor
    reads the section declares it (once); two owners for one name are a programming error."""
    known = WORLD_SECTIONS.get(name)
    if known is not None and known.owner != owner:
        raise ValueError(f"world section {name!r} is declared by {known.owner} and {owner}")
    WORLD_SECTIONS[name] = WorldSection(name=name, annotation=annotation, owner=owner, doc=doc)


class SectionModel(BaseModel):
    """Base of every world-section model: an unknown field is an error (a misspelt field
    would otherwise silently change how a counterparty behaves). Fields whose JSON name is a
    Python keyword (``from``) use an alias; both names are accepted when building."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


#: A business date in a world file, as the actors compare it (ISO text, YYYY-MM-DD).
WorldDate = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]


class ActorUsers(SectionModel):
    """``actors``: the system users the bank and the vendors act as."""

    bank: str = "sys-bank"
    vendor: str = "sys-vendor"


world_section("actors", ActorUsers, owner=__name__, doc="the system users counterparties act as")
world_section("agent_users", list[str], owner=__name__,
              doc="the users the agent works as: no counterparty ever acts as them")


@dataclass
class World:
    """What actors read: the world file's sections as plain JSON data. Build it from a
    validated file with `erp_service.world.load_world` (the server does); tests may pass a
    dict directly."""

    data: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str, default: Any = None) -> Any:
        """One top-level section."""
        return self.data.get(name, default if default is not None else {})


ActorFn = Callable[["Day"], None]
ACTORS: dict[str, list[ActorFn]] = {kind: [] for kind in ACTOR_ORDER}


def actor(kind: str) -> Callable[[ActorFn], ActorFn]:
    """Register a counterparty behaviour under one of ACTOR_ORDER."""
    if kind not in ACTORS:
        raise ValueError(f"unknown actor kind {kind!r}")

    def deco(fn: ActorFn) -> ActorFn:
        ACTORS[kind].append(fn)
        return fn
    return deco


@dataclass
class Day:
    """What an actor function gets: the day, the world, and a way to act as a user."""

    db: Database
    world: World
    date: str
    actions: int = 0
    refusals: int = 0
    _actors: dict[str, Actor] = field(default_factory=dict)

    def as_user(self, user_id: str) -> Actor:
        """The actor for a counterparty or staff user, channel sim."""
        if user_id not in self._actors:
            a = load_actor(self.db.conn, user_id, channel="sim", token_id=None)
            if a is None:
                raise RuntimeError(f"world names unknown user {user_id!r}")
            self._actors[user_id] = a
        return self._actors[user_id]

    def act(self, user_id: str, action: str, path: str, body: Any, fn: Callable[[Tx], Any],
            *, permission: str | None = None) -> Any:
        """Perform one audited write as `user_id`; returns its data, or None if refused."""
        try:
            out = pipeline.write(self.db, self.as_user(user_id), action=action, method="SIM", path=path,
                                 body=body, fn=fn, permission=permission)
        except Problem:
            self.refusals += 1
            return None
        self.actions += 1
        return out.data

    def look(self, fn: Callable[[Tx], Any], user_id: str = "sys-sim") -> Any:
        """Read the database (not audited: counterparties' own reads are not requests)."""
        tx = Tx(conn=self.db.conn, actor=Actor(user_id=user_id, channel="sim"), business_date=self.date)
        return fn(tx)

    def log(self, actor_id: str, kind: str, ref: str | None, payload: Any) -> None:
        """Record what a counterparty sent."""
        self.db.conn.execute(sim_log.insert().values(day=self.date, actor=actor_id, kind=kind, ref=ref,
                                                     payload=json.dumps(payload, sort_keys=True, default=str)))


#: fn(conn, "YYYY-MM-DD") -> whether counterparties act that day (org's calendar registers it).
_WORKDAY: list[Callable[[Any, str], bool]] = []


def register_workday(fn: Callable[[Any, str], bool]) -> None:
    """Install the calendar that says which days are workdays (the org domain does)."""
    _WORKDAY[:] = [fn]


def advance(db: Database, world: World, to: str,
            workday: Callable[[Any, str], bool] | None = None) -> list[dict[str, Any]]:
    """Move the business date to `to`, one day at a time; returns a summary per day.

    Raises ValueError for a date in the past and AdvanceError when a day fails.
    """
    if workday is None:
        if not _WORKDAY:
            raise RuntimeError("no workday calendar registered: erp_service.domains is not imported")
        workday = _WORKDAY[0]
    target = dt.date.fromisoformat(to)
    days: list[dict[str, Any]] = []
    with db.lock:
        current = dt.date.fromisoformat(db.business_date())
        if target < current:
            raise ValueError(f"cannot move the clock back from {current} to {target}")
        day = current
        while day < target:
            day += dt.timedelta(days=1)
            iso = day.isoformat()
            state = Day(db=db, world=world, date=iso)
            started = time.monotonic()
            try:
                with db.transaction() as conn:
                    set_business_date(conn, iso)
                    if workday(conn, iso):
                        for kind in ACTOR_ORDER:
                            for fn in ACTORS[kind]:
                                fn(state)
            except Exception as exc:  # the day is rolled back whole
                log.error("day_failed", date=iso, reason=f"{type(exc).__name__}: {exc}")
                raise AdvanceError(iso, f"{type(exc).__name__}: {exc}") from exc
            days.append({"date": iso, "actions": state.actions, "refusals": state.refusals})
            log.info("day_advanced", date=iso, actions=state.actions, refusals=state.refusals,
                     duration_s=round(time.monotonic() - started, 4))
    return days
