"""The inventory subledger: the sum of the values the stock transactions carried."""
from __future__ import annotations

from sqlalchemy import func, select

from .. import ledger
from .tables import inventory_txns


def inventory_subledger(conn, as_of: str | None) -> int:
    """Value of stock on hand at standard cost (debit positive), from the transactions."""
    stmt = select(func.coalesce(func.sum(inventory_txns.c.value_cents), 0))
    if as_of:
        stmt = stmt.where(inventory_txns.c.on_date <= as_of)
    return int(conn.execute(stmt).scalar() or 0)


ledger.register_subledger("inventory", inventory_subledger)
