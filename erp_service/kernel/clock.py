"""The business clock: one date in the `meta` table, moved only by the host (or by generators)."""
from __future__ import annotations

import datetime as dt

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from .schema import meta


def get_business_date(conn: Connection) -> str:
    """The current business date (ISO string)."""
    value = conn.execute(select(meta.c.value).where(meta.c.key == "business_date")).scalar()
    if value is None:
        raise RuntimeError("database has no business_date")
    return value


def set_business_date(conn: Connection, day: str) -> None:
    """Set the business date (inside the caller's transaction)."""
    dt.date.fromisoformat(day)
    if conn.execute(select(meta.c.key).where(meta.c.key == "business_date")).first() is None:
        conn.execute(meta.insert().values(key="business_date", value=day))
    else:
        conn.execute(update(meta).where(meta.c.key == "business_date").values(value=day))


def add_days(day: str, n: int) -> str:
    """`day` plus `n` calendar days."""
    return (dt.date.fromisoformat(day) + dt.timedelta(days=n)).isoformat()


def wall_now() -> str:
    """Wall-clock time for `wall_time` columns only (UTC, milliseconds)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
