"""The one SQLAlchemy MetaData every domain registers its tables on, and column helpers.

Conventions (every domain follows them so the grader and the canonical hash can rely on them):
- document ids are text like ``APINV-10001`` from the `seq` table (see `Tx.next_id`);
- money is integer cents in columns ending ``_cents``; quantities and unit prices are REAL
  rounded to 4 places; dates are ISO ``YYYY-MM-DD`` strings on the business clock;
- the only wall-clock values live in columns named ``wall_time`` or ending in ``_wall``; the
  canonical hash leaves exactly those out;
- every document row carries ``status``, ``created_by``, ``created_on`` and ``created_wall``;
  each status change is a row of ``status_history`` with its reason.
"""
from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Integer, MetaData, String, Table, Text

metadata = MetaData()

#: Column-name test for wall-clock (volatile) values.
def is_volatile_column(name: str) -> bool:
    """True for columns that hold wall-clock time and are excluded from the canonical hash."""
    return name == "wall_time" or name.endswith("_wall")


def doc_columns() -> list[Column]:
    """The columns every document table starts with."""
    return [
        Column("id", String, primary_key=True),
        Column("status", String, nullable=False),
        Column("created_by", String, nullable=True),
        Column("created_on", String, nullable=False),
        Column("created_wall", String, nullable=True),
    ]


# Kernel tables -----------------------------------------------------------------------------

meta = Table(
    "meta", metadata,
    Column("key", String, primary_key=True),
    Column("value", Text, nullable=False),
)

seq = Table(
    "seq", metadata,
    Column("prefix", String, primary_key=True),
    Column("next", Integer, nullable=False),
)

status_history = Table(
    "status_history", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("doc_type", String, nullable=False, index=True),
    Column("doc_id", String, nullable=False, index=True),
    Column("from_status", String),
    Column("to_status", String, nullable=False),
    Column("on_date", String, nullable=False),
    Column("by_user", String),
    Column("reason", Text),
)

audit_events = Table(
    "audit_events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("business_date", String, nullable=False),
    Column("wall_time", String, nullable=False),
    Column("channel", String, nullable=False),
    Column("actor", String),
    Column("token_id", String),
    Column("method", String, nullable=False),
    Column("path", String, nullable=False),
    Column("action", String, nullable=False),
    Column("object_type", String),
    Column("object_id", String),
    Column("before", Text),
    Column("after", Text),
    Column("outcome", String, nullable=False),
    Column("status", Integer, nullable=False),
    Column("error_code", String),
    Column("idem_key", String),
    Column("replay", Integer, nullable=False, default=0),
    Column("request", Text),
)

idempotency = Table(
    "idempotency", metadata,
    Column("user_id", String, primary_key=True),
    Column("key", String, primary_key=True),
    Column("fingerprint", String, nullable=False),
    Column("status", Integer, nullable=False),
    Column("response", Text, nullable=False),
    Column("audit_id", Integer),
)

__all__ = ["metadata", "doc_columns", "is_volatile_column", "Column", "Float", "ForeignKey",
           "Integer", "String", "Table", "Text", "meta", "seq", "status_history", "audit_events",
           "idempotency"]
