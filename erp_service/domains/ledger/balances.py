"""Balances per account, the trial balance, and each control account beside the subledger its
domain registered (`register_subledger`)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select

from .tables import accounts, journal_entries, journal_lines

SubledgerFn = Callable[[Any, str | None], int]   # (connection, as_of date or None) -> cents
SUBLEDGERS: dict[str, SubledgerFn] = {}


def register_subledger(key: str, fn: SubledgerFn) -> None:
    """Declare how to compute the subledger balance behind control key `key` (debit positive)."""
    SUBLEDGERS[key] = fn


def account_balances(conn, as_of: str | None = None) -> dict[str, int]:
    """Debit-positive balance per account of posted (and reversed) entries up to `as_of`."""
    stmt = (select(journal_lines.c.account_id,
                   func.sum(journal_lines.c.debit_cents - journal_lines.c.credit_cents))
            .join(journal_entries, journal_entries.c.id == journal_lines.c.entry_id)
            .where(journal_entries.c.status.in_(("posted", "reversed")))
            .group_by(journal_lines.c.account_id))
    if as_of:
        stmt = stmt.where(journal_entries.c.entry_date <= as_of)
    return {a: int(b or 0) for a, b in conn.execute(stmt)}


def trial_balance(conn, as_of: str | None = None) -> dict:
    """Balances per account, total debits and credits, and whether they balance."""
    bals = account_balances(conn, as_of)
    names = {r.id: (r.name, r.type) for r in conn.execute(select(accounts))}
    rows = [{"account": a, "name": names.get(a, ("?", "?"))[0], "type": names.get(a, ("?", "?"))[1],
             "debit": max(b, 0) / 100, "credit": max(-b, 0) / 100} for a, b in sorted(bals.items())]
    debit = sum(max(b, 0) for b in bals.values())
    credit = sum(max(-b, 0) for b in bals.values())
    return {"as_of": as_of, "rows": rows, "total_debit": debit / 100, "total_credit": credit / 100,
            "balanced": debit == credit}


def control_ties(conn, as_of: str | None = None) -> list[dict]:
    """For each control account: GL balance, subledger balance, difference, tied."""
    bals = account_balances(conn, as_of)
    out = []
    for row in conn.execute(select(accounts).where(accounts.c.control.is_not(None)).order_by(accounts.c.id)):
        fn = SUBLEDGERS.get(row.control)
        gl = bals.get(row.id, 0)
        sub = fn(conn, as_of) if fn else None
        out.append({"control": row.control, "account": row.id, "name": row.name, "gl": gl / 100,
                    "subledger": None if sub is None else sub / 100,
                    "difference": None if sub is None else (gl - sub) / 100,
                    "tied": sub is not None and gl == sub})
    return out
