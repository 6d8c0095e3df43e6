"""Bank accounts as the API shows them (book and statement balances) and the cash account a
payment from one posts to."""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ...kernel.errors import invalid, refused
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .. import ledger
from .tables import bank_accounts, bank_statement_lines


def statement_balance_cents(conn: Any, bank_account_id: str, as_of: str | None = None) -> int:
    """The bank's balance: the sum of statement lines up to `as_of`."""
    stmt = select(func.coalesce(func.sum(bank_statement_lines.c.amount_cents), 0)).where(
        bank_statement_lines.c.bank_account_id == bank_account_id)
    if as_of:
        stmt = stmt.where(bank_statement_lines.c.date <= as_of)
    return int(conn.execute(stmt).scalar() or 0)


def bank_account_out(tx: Tx, row: dict, as_of: str | None = None) -> dict:
    """A company bank account with its book (GL) and statement balances."""
    book = ledger.account_balances(tx.conn, as_of).get(row["gl_account_id"], 0)
    num = row["account_number"]
    return {"id": row["id"], "name": row["name"], "bank_name": row["bank_name"],
            "account_number": ("****" + num[-4:]) if num else None, "gl_account": row["gl_account_id"],
            "status": row["status"], "balance": from_cents(book),
            "statement_balance": from_cents(statement_balance_cents(tx.conn, row["id"], as_of))}


def cash_account_of(tx: Tx, bank_account_id: str) -> str:
    """The GL cash account of an active company bank account (422 unknown, 409 inactive)."""
    row = tx.find(bank_accounts, id=bank_account_id)
    if row is None:
        raise invalid(f"Bank account {bank_account_id} does not exist (see GET /bank-accounts).")
    if row["status"] != "active":
        raise refused("bank_account_inactive", f"Bank account {bank_account_id} is not active.")
    return row["gl_account_id"]
