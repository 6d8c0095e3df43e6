"""The business clock: one date in the `meta` table, moved only by the host (or by generators)."""
from __future__ import annotations

import datetime as dt

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from .schema import meta


def get_business_date(conn: Connection) -> str:
    """The current business date (ISO string)."""
    # Every request reads it: a fixed statement on the driver (kept prepared by sqlite3), not a
    # SQLAlchemy statement built and looked up each time. Same connection, same transaction.
    row = conn.connection.driver_connection.execute(_DATE_SELECT).fetchone()  # type: ignore[union-attr]
    value = row[0] if row is not None else None
    if value is None:
        raise RuntimeError("database has no business_date")
    return value


_DATE_SELECT = f"SELECT value FROM {meta.name} WHERE \"key\" = 'business_date'"


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
