"""Opting a scenario in (`install`: the tables, classes, grants and employee records) and the
grader's question: may this recipient see this owner's value of this class on this day
(`visibility`)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import inspect, select

from ...kernel.db import create_schema
from ...kernel.identity import user_roles, users
from .tables import CLASSES, DEFAULT_ROLE_GRANTS, GRANTEE_KINDS, data_access, data_classes, employee_records, infoflow_metadata


def installed(conn) -> bool:
    """True if this database opted in (has the `data_access` table)."""
    return inspect(conn).has_table("data_access")


def install(builder: Any, *, grants: Iterable[dict[str, Any]] = (),
            employees: Iterable[dict[str, Any]] = (), default_grants: bool = True) -> None:
    """Opt a scenario database in: create the tables and fill classes, grants and records.

    `builder` is a `setup.CompanyBuilder` (or a `Database`). `grants` are `data_access` rows
    (``class``, ``grantee_kind`` and the fields that kind needs); `employees` are
    `employee_records` rows. With `default_grants`, the standing role grants of
    `DEFAULT_ROLE_GRANTS` and an owner grant per class are added first. Raises ValueError for
    a malformed grant."""
    db = getattr(builder, "db", builder)
    rows: list[dict[str, Any]] = []
    if default_grants:
        for cls, role_ids in DEFAULT_ROLE_GRANTS.items():
            rows += [{"class": cls, "grantee_kind": "role", "role_id": r} for r in role_ids]
        rows += [{"class": cls, "grantee_kind": "owner"} for cls in ("vendor_bank", "employee", "payroll")]
    rows += [dict(g) for g in grants]
    for g in rows:
        _check_grant(g)
    with db.transaction() as conn:
        create_schema(conn, infoflow_metadata)
        conn.execute(data_classes.insert(), [{"id": k, "description": d, "sources": s}
                                             for k, (d, s) in CLASSES.items()])
        conn.execute(data_access.insert(), [{c.name: g.get(c.name) for c in data_access.columns if c.name != "id"}
                                            for g in rows])
        emps = [dict(e) for e in employees]
        if emps:
            conn.execute(employee_records.insert(), [{c.name: e.get(c.name) for c in employee_records.columns}
                                                     for e in emps])


def _check_grant(g: dict[str, Any]) -> None:
    if g.get("class") not in CLASSES:
        raise ValueError(f"grant names unknown data class {g.get('class')!r}; classes: {', '.join(CLASSES)}")
    kind = g.get("grantee_kind")
    if kind not in GRANTEE_KINDS:
        raise ValueError(f"grant kind must be one of {GRANTEE_KINDS}, got {kind!r}")
    if kind == "role" and not g.get("role_id"):
        raise ValueError("a role grant needs role_id")
    if kind == "user":
        missing = [k for k in ("user_id", "valid_from", "valid_to", "purpose") if not g.get(k)]
        if missing:
            raise ValueError(f"a duty-to-know grant needs {', '.join(missing)}")
        if g["valid_from"] > g["valid_to"]:
            raise ValueError("a duty-to-know grant ends before it starts")
    unknown = set(g) - {c.name for c in data_access.columns}
    if unknown:
        raise ValueError(f"unknown grant field(s): {', '.join(sorted(unknown))}")


def resolve_recipient(conn, address: str) -> tuple[str, str | None]:
    """``("staff", user_id)`` for a user id or staff email, ``("vendor", vendor_id)`` for a
    vendor's email on file, else ``("external", None)``. ``Name <addr>`` forms are accepted."""
    key = address.strip().lower()
    m = re.search(r"<([^>]+)>", key)
    if m:
        key = m.group(1).strip()
    for row in conn.execute(select(users.c.id, users.c.email)):
        if row.id.lower() == key or (row.email or "").lower() == key:
            return "staff", row.id
    if inspect(conn).has_table("vendors"):
        from sqlalchemy import column, table
        v = table("vendors", column("id"), column("email"))
        for row in conn.execute(select(v.c.id, v.c.email)):
            if (row.email or "").lower() == key:
                return "vendor", str(row.id)
    return "external", None


def visibility(conn, recipient: str, data_class: str, owner: str, day: str) -> bool:
    """May `recipient` (an address or user id) see `owner`'s value of `data_class` on `day`?

    Staff see it through a granted role, a duty-to-know grant valid on `day` (for this owner
    when the grant names one), or by owning the record; a vendor sees only its own records; an
    external address sees nothing. Without the opt-in tables, only `DEFAULT_ROLE_GRANTS` apply.
    Raises KeyError for an unknown class."""
    if data_class not in CLASSES:
        raise KeyError(f"unknown data class {data_class!r}")
    kind, who = resolve_recipient(conn, recipient)
    if kind == "external" or who is None:
        return False
    if kind == "vendor":
        return who == owner
    roles = {r for (r,) in conn.execute(select(user_roles.c.role_id).where(user_roles.c.user_id == who))}
    if not installed(conn):
        return bool(roles & set(DEFAULT_ROLE_GRANTS.get(data_class, ())))
    for g in conn.execute(select(data_access).where(data_access.c["class"] == data_class)
                          .order_by(data_access.c.id)).mappings():
        if g["grantee_kind"] == "role" and g["role_id"] in roles:
            return True
        if g["grantee_kind"] == "user" and g["user_id"] == who \
                and (g["valid_from"] or "") <= day <= (g["valid_to"] or "9999-12-31") \
                and (g["record_id"] is None or str(g["record_id"]) == owner):
            return True
        if g["grantee_kind"] == "owner" and who == owner:
            return True
    return False
