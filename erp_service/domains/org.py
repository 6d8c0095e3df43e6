"""Organisation: departments, approval limits, delegations, leave, the calendar, and the
read routes about people (`/whoami`, `/users`)."""
from __future__ import annotations

import datetime as dt

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import Column, Integer, String, Table, Text, select

from ..http.api import Api, Envelope, Page, page_params, read_api
from ..http.lazy_routes import DomainRouter
from ..kernel.dates import IsoDate
from ..kernel.identity import user_roles, users
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import from_cents
from ..kernel.schema import metadata
from ..kernel.tx import Tx
from ..sim import register_workday
from .roles import readable_boxes

departments = Table(
    "departments", metadata,
    Column("id", String, primary_key=True),
    Column("name", String, nullable=False),
    Column("head_user_id", String),
    Column("cost_center", String),
)

#: Per user and document type: the highest amount the user may approve.
approval_limits = Table(
    "approval_limits", metadata,
    Column("user_id", String, primary_key=True),
    Column("doc_type", String, primary_key=True),   # requisition, purchase_order, payment_run, journal_entry, ap_invoice
    Column("limit_cents", Integer, nullable=False),
)

delegations = Table(
    "delegations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("from_user", String, nullable=False),
    Column("to_user", String, nullable=False),
    Column("doc_type", String),                      # null = all document types
    Column("start_date", String, nullable=False),
    Column("end_date", String, nullable=False),
)

leave = Table(
    "leave", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", String, nullable=False),
    Column("start_date", String, nullable=False),
    Column("end_date", String, nullable=False),
    Column("note", Text),
)

#: Non-working days of the company calendar (weekends are implicit).
calendar = Table(
    "calendar", metadata,
    Column("day", String, primary_key=True),
    Column("kind", String, nullable=False),          # holiday | plant_shutdown
    Column("note", Text),
)

company = Table(
    "company", metadata,
    Column("key", String, primary_key=True),
    Column("value", Text, nullable=False),
)


# Service functions -------------------------------------------------------------------------

def is_workday(tx_or_conn, day: str) -> bool:
    """True if `day` is neither a weekend nor a calendar holiday."""
    d = dt.date.fromisoformat(day)
    if d.weekday() >= 5:
        return False
    conn = getattr(tx_or_conn, "conn", tx_or_conn)
    return conn.execute(select(calendar.c.day).where(calendar.c.day == day)).first() is None


register_workday(is_workday)


def on_leave(tx: Tx, user_id: str, day: str | None = None) -> bool:
    """True if the user is on leave on `day` (default: today)."""
    day = day or tx.business_date
    return tx.one(select(leave.c.id).where(leave.c.user_id == user_id, leave.c.start_date <= day,
                                           leave.c.end_date >= day)) is not None


def delegate_of(tx: Tx, user_id: str, doc_type: str, day: str | None = None) -> str | None:
    """The user's delegate for `doc_type` on `day`, if a delegation is in force."""
    day = day or tx.business_date
    row = tx.one(select(delegations.c.to_user).where(
        delegations.c.from_user == user_id, delegations.c.start_date <= day, delegations.c.end_date >= day,
        (delegations.c.doc_type == doc_type) | (delegations.c.doc_type.is_(None))).order_by(delegations.c.id))
    return row["to_user"] if row else None


def approval_limit_cents(tx: Tx, user_id: str, doc_type: str) -> int:
    """The user's approval limit for `doc_type` in cents (0 when none is set)."""
    row = tx.find(approval_limits, user_id=user_id, doc_type=doc_type)
    return int(row["limit_cents"]) if row else 0


def user_view(tx: Tx, user_id: str) -> dict:
    """A user with roles, limits, leave and delegations."""
    u = tx.get(users, user_id, "user")
    return {
        "id": u["id"], "name": u["name"], "title": u["title"], "kind": u["kind"],
        "department": u["department_id"], "manager": u["manager_id"], "email": u["email"],
        "phone": u["phone"], "active": bool(u["active"]),
        "roles": [r["role_id"] for r in tx.rows(user_roles, user_id=user_id)],
        "approval_limits": {r["doc_type"]: from_cents(r["limit_cents"])
                            for r in tx.rows(approval_limits, user_id=user_id)},
        "leave": [{"start": r["start_date"], "end": r["end_date"]} for r in tx.rows(leave, user_id=user_id)],
        "delegations": [{"to": r["to_user"], "doc_type": r["doc_type"], "start": r["start_date"],
                         "end": r["end_date"]} for r in tx.rows(delegations, from_user=user_id)],
    }


def whoami(tx: Tx) -> dict:
    """The signed-in user, their permissions and boxes, the company and the business date."""
    view = user_view(tx, tx.actor.user_id)
    names = {r["key"]: r["value"] for r in tx.rows(company)}
    view.update({
        "permissions": sorted(tx.actor.permissions),
        "boxes": readable_boxes(tx.actor),
        "company": names.get("name"),
        "business_date": tx.business_date,
        "weekday": dt.date.fromisoformat(tx.business_date).strftime("%A"),
    })
    return view


# Router ------------------------------------------------------------------------------------

class UserOut(BaseModel):
    id: str
    name: str
    title: str | None = None
    kind: str
    department: str | None = None
    manager: str | None = None
    email: str | None = None
    phone: str | None = None
    active: bool
    roles: list[str]
    approval_limits: dict[str, float]
    leave: list[dict[str, str]]
    delegations: list[dict[str, str | None]]


class WhoAmI(UserOut):
    permissions: list[str]
    boxes: list[str]
    company: str | None = None
    business_date: str
    weekday: str


class DepartmentOut(BaseModel):
    id: str
    name: str
    head_user_id: str | None = None
    cost_center: str | None = None


class CalendarDay(BaseModel):
    day: str
    kind: str
    note: str | None = None


router = DomainRouter(tags=["organisation"])


@router.get("/whoami", response_model=Envelope[WhoAmI], summary="Who you are: role, limits, boxes, business date")
def get_whoami(api: Api = Depends(read_api)):
    return api.read(whoami)


@router.get("/users", response_model=Envelope[Page[UserOut]], summary="List users")
def list_users(department: str | None = None, page: PageRequest = Depends(page_params),
               api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(users.c.id).where(users.c.kind == "staff").order_by(users.c.id)
        listed = paginate(tx, stmt, page, department_id=department)
        listed["items"] = [user_view(tx, r["id"]) for r in listed["items"]]
        return listed
    return api.read(fn)


@router.get("/users/{user_id}", response_model=Envelope[UserOut], summary="One user with limits, leave, delegations")
def get_user(user_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: user_view(tx, user_id), object_type="user", object_id=user_id)


@router.get("/departments", response_model=Envelope[Page[DepartmentOut]], summary="List departments")
def list_departments(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(departments).order_by(departments.c.id), page))


@router.get("/calendar", response_model=Envelope[Page[CalendarDay]], summary="Non-working days (weekends implicit)")
def list_calendar(date_from: IsoDate | None = None, date_to: IsoDate | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(calendar).order_by(calendar.c.day)
        if date_from:
            stmt = stmt.where(calendar.c.day >= date_from.isoformat())
        if date_to:
            stmt = stmt.where(calendar.c.day <= date_to.isoformat())
        return paginate(tx, stmt, page)
    return api.read(fn)
