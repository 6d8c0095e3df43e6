"""Organisation response models and routes (`/whoami`, `/users`, `/departments`, `/calendar`)."""
from __future__ import annotations

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api
from ...http.lazy_routes import DomainRouter
from ...kernel.dates import IsoDate
from ...kernel.identity import users
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from .service import user_view, whoami
from .tables import calendar, departments


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
