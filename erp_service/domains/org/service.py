"""Organisation service functions: the calendar's workdays, leave, delegations, approval limits and
the views of a user and of the signed-in user."""
from __future__ import annotations

import datetime as dt

from sqlalchemy import select

from ...kernel.identity import user_roles, users
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ...sim import register_workday
from ..roles import readable_boxes
from .tables import approval_limits, calendar, company, delegations, leave


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
