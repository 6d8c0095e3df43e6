"""Finite scheduling and order promising: work-order operations booked on work centres by day,
and the date promised to the customer on a sales order.

An *operation* (`OPR-…`, scheduled → cancelled) books hours of one routing step of a work order
on one working day; its work centre is the step's. A work order's start and due dates follow its
live operations (the first and the last day). A *promise* is the ship date given to the customer
on an open sales order; promising again replaces it (the audit log keeps every before-image).

Hard controls: operations only for planned or released work orders, only for a step of the
item's routing, only on a working day of the plant calendar, never in the past; promises only on
open orders, on a working day, never in the past. Capacity is not a hard control: keeping each
work centre's booked hours within its daily capacity is the planner's job (the load view shows
both).

The two tables are a *feature* of a company, created by `enable_scheduling` (a scenario that
uses them calls it), not by the company's schema: adding them to every company would change the
canonical dump of every existing scenario. A company without them answers reads with nothing and
refuses writes (`not_enabled`). The action codes `wo.schedule`, `wo.unschedule` and `so.promise`
are granted by the scenario too (admin holds them through `*`).
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field
from sqlalchemy import Column, Connection, Float, Integer, MetaData, String, Table, Text, func, inspect, select

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.errors import invalid, refused
from ...kernel.identity import role_permissions
from ...kernel.money import Quantity, q4
from ...kernel.schema import doc_columns
from ...kernel.tx import Tx, register_object
from ..manufacturing import work_orders
from ..masterdata import routings, work_centers
from ..org.service import is_workday
from ..sales.tables import OPEN_ORDER_STATUSES, sales_orders

#: The feature's own MetaData: its tables are created per company by `enable_scheduling`.
feature_metadata = MetaData()

wo_operations = Table(
    "wo_operations", feature_metadata,
    *doc_columns(),                                   # scheduled | cancelled
    Column("wo_id", String, nullable=False, index=True),
    Column("step", Integer, nullable=False),
    Column("work_center_id", String, nullable=False),
    Column("day", String, nullable=False),
    Column("hours", Float, nullable=False),
    Column("note", Text),
)

so_promises = Table(
    "so_promises", feature_metadata,
    Column("so_id", String, primary_key=True),
    Column("promise_date", String, nullable=False),
    Column("promised_by", String, nullable=False),
    Column("promised_on", String, nullable=False),
    Column("note", Text),
)

register_object("wo_operation", wo_operations)
register_object("so_promise", so_promises)

#: Action codes of the feature (granted by a scenario that enables it).
SCHEDULING_ACTIONS = ("wo.schedule", "wo.unschedule", "so.promise")
LIVE = "scheduled"


class OperationIn(In):
    """Book hours of one routing step of the work order on one working day."""

    step: int = Field(ge=1, le=99)
    day: IsoDate
    hours: Quantity = Field(gt=0, le=1000)
    note: str | None = Field(None, max_length=500)


class OperationCancelIn(In):
    """Why the booking is cancelled."""

    note: str | None = Field(None, max_length=500)


class PromiseIn(In):
    """The ship date promised to the customer."""

    promise_date: IsoDate
    note: str | None = Field(None, max_length=500)


def enable_scheduling(conn: Connection, roles: tuple[str, ...] = ("planner",)) -> None:
    """Create the feature's tables in this company and grant its actions to `roles`."""
    feature_metadata.create_all(conn)
    for role in roles:
        for action in SCHEDULING_ACTIONS:
            conn.execute(role_permissions.insert().values(role_id=role, permission=action))


def enabled(tx: Tx) -> bool:
    """True when this company has the scheduling tables."""
    return inspect(tx.conn).has_table(wo_operations.name)


def _require(tx: Tx) -> None:
    if not enabled(tx):
        raise refused("not_enabled", "Finite scheduling and order promising are not set up in this company.")


def _future_workday(tx: Tx, day: str, what: str) -> None:
    if day < tx.business_date:
        raise refused("date_in_past", f"{what} {day} is before today ({tx.business_date}).", day=day)
    if not is_workday(tx, day):
        raise refused("non_working_day", f"{what} {day} is not a working day of the plant calendar.", day=day)


def _redate(tx: Tx, wo_id: str) -> None:
    """The work order's start and due dates follow its live operations."""
    span = tx.one(select(func.min(wo_operations.c.day).label("first"), func.max(wo_operations.c.day).label("last"))
                  .where(wo_operations.c.wo_id == wo_id, wo_operations.c.status == LIVE))
    if span and span["first"]:
        tx.touch("work_order", wo_id)
        tx.update(work_orders, wo_id, start_date=span["first"], due_date=span["last"])


def add_operation(tx: Tx, wo_id: str, body: OperationIn) -> dict[str, Any]:
    """Book one step's hours on one day; the work centre is the routing step's."""
    _require(tx)
    wo = tx.get(work_orders, wo_id, "work_order")
    if wo["status"] not in ("planned", "released"):
        raise refused("not_schedulable", f"Work order {wo_id} is {wo['status']}; only a planned or released order "
                      f"can be scheduled.", status=wo["status"])
    step = tx.find(routings, item_id=wo["item_id"], step=body.step)
    if step is None:
        raise refused("not_in_routing", f"{wo['item_id']} has no routing step {body.step}.", step=body.step)
    day = body.day.isoformat()
    _future_workday(tx, day, "The day")
    op = tx.create_doc("wo_operation", wo_operations, "OPR", LIVE, wo_id=wo_id, step=body.step,
                       work_center_id=step["work_center_id"], day=day, hours=q4(body.hours), note=body.note)
    _redate(tx, wo_id)
    return operation_view(tx, op["id"])


def cancel_operation(tx: Tx, op_id: str, body: OperationCancelIn | None) -> dict[str, Any]:
    """Cancel a booking (the work order's dates follow the bookings left)."""
    _require(tx)
    op = tx.get(wo_operations, op_id, "wo_operation")
    wo = tx.get(work_orders, op["wo_id"], "work_order")
    if wo["status"] not in ("planned", "released"):
        raise refused("not_schedulable", f"Work order {wo['id']} is {wo['status']}; its schedule can no longer "
                      f"change.", status=wo["status"])
    if op["status"] != LIVE:
        raise refused("bad_status", f"Operation {op_id} is {op['status']}.", status=op["status"])
    tx.set_status("wo_operation", wo_operations, op_id, "cancelled", (body.note if body else None) or "cancelled")
    _redate(tx, op["wo_id"])
    return operation_view(tx, op_id)


def operation_view(tx: Tx, op_id: str) -> dict[str, Any]:
    """One operation with its history."""
    op = tx.get(wo_operations, op_id, "wo_operation")
    return {**{k: v for k, v in op.items() if k != "created_wall"}, "history": tx.history("wo_operation", op_id),
            "links": {"work_order": [op["wo_id"]], "work_center": [op["work_center_id"]]}}


def list_operations(tx: Tx, *, wo_id: str | None = None, work_center_id: str | None = None,
                    date_from: str | None = None, date_to: str | None = None,
                    status: str | None = LIVE) -> list[dict[str, Any]]:
    """Operations by day, work centre and work order (default: the live ones)."""
    if not enabled(tx):
        return []
    stmt = select(wo_operations).order_by(wo_operations.c.day, wo_operations.c.work_center_id, wo_operations.c.id)
    for col, value in (("wo_id", wo_id), ("work_center_id", work_center_id), ("status", status)):
        if value is not None:
            stmt = stmt.where(wo_operations.c[col] == value)
    if date_from:
        stmt = stmt.where(wo_operations.c.day >= date_from)
    if date_to:
        stmt = stmt.where(wo_operations.c.day <= date_to)
    return [{k: v for k, v in r.items() if k != "created_wall"} for r in tx.all(stmt)]


def load(tx: Tx, date_from: str, date_to: str) -> list[dict[str, Any]]:
    """Booked hours beside capacity, per work centre and working day from `date_from` to `date_to`."""
    a, b = dt.date.fromisoformat(date_from), dt.date.fromisoformat(date_to)
    if b < a or (b - a).days > 92:
        raise invalid("date_to must be on or after date_from and at most 92 days later.")
    booked: dict[tuple[str, str], float] = {}
    for op in list_operations(tx, date_from=date_from, date_to=date_to):
        key = (op["work_center_id"], op["day"])
        booked[key] = q4(booked.get(key, 0.0) + op["hours"])
    out = []
    centres = tx.all(select(work_centers).order_by(work_centers.c.id))
    d = a
    while d <= b:
        day = d.isoformat()
        if is_workday(tx, day):
            for wc in centres:
                hours = booked.get((wc["id"], day), 0.0)
                out.append({"work_center_id": wc["id"], "day": day, "capacity_hours": wc["daily_capacity_hours"],
                            "booked_hours": hours, "free_hours": q4(wc["daily_capacity_hours"] - hours)})
        d += dt.timedelta(days=1)
    return out


def promise_order(tx: Tx, so_id: str, body: PromiseIn) -> dict[str, Any]:
    """Record (or replace) the ship date promised on an open sales order."""
    _require(tx)
    so = tx.get(sales_orders, so_id, "sales_order")
    if so["status"] not in OPEN_ORDER_STATUSES:
        raise refused("order_not_open", f"Sales order {so_id} is {so['status']}; only an open order gets a promise.",
                      status=so["status"])
    day = body.promise_date.isoformat()
    _future_workday(tx, day, "The promise date")
    tx.touch("so_promise", so_id)
    values = {"promise_date": day, "promised_by": tx.actor.user_id, "promised_on": tx.business_date,
              "note": body.note}
    if tx.find(so_promises, so_id=so_id) is None:
        tx.insert(so_promises, so_id=so_id, **values)
    else:
        tx.update(so_promises, so_id, **values)
    return promise_view(tx, so_id)


def promise_view(tx: Tx, so_id: str) -> dict[str, Any]:
    """A sales order's promise (`promise_date` null when none was given)."""
    tx.get(sales_orders, so_id, "sales_order")
    row = tx.find(so_promises, so_id=so_id) if enabled(tx) else None
    return {"so_id": so_id, "promise_date": None, "promised_by": None, "promised_on": None, "note": None,
            **(row or {})}
