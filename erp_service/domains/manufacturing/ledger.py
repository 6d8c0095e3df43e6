"""The WIP subledger: the sum of the WIP value movements."""
from __future__ import annotations

from sqlalchemy import func, select

from .. import ledger
from .tables import wip_txns


def wip_subledger(conn, as_of: str | None) -> int:
    """Value in WIP across work orders (debit positive)."""
    stmt = select(func.coalesce(func.sum(wip_txns.c.value_cents), 0))
    if as_of:
        stmt = stmt.where(wip_txns.c.on_date <= as_of)
    return int(conn.execute(stmt).scalar() or 0)


ledger.register_subledger("wip", wip_subledger)
