"""The bank's side of cash movements: every posted entry that moves a bank account's GL cash
account appears on that account's statement the same day (the opening balance as an
``opening`` line, then ``deposit`` and ``withdrawal`` lines) — except payments, which the
bank reports when they clear (`payments.actors`). So the statement balance is the book
balance less the payments released and not yet cleared, from the company's first day.
"""
from __future__ import annotations

from sqlalchemy import select

from ...kernel.tx import Tx
from .. import ledger
from .tables import bank_accounts, bank_statement_lines

#: Entry sources the bank reports otherwise (payments: when they clear; ``bank``: entries booking
#: a line the bank itself put on the statement, `booking`).
NOT_ON_STATEMENT = ("payment", "bank")


def report_cash_movement(tx: Tx, entry_id: str) -> None:
    """Write statement lines for the bank-account lines of a posted entry."""
    entry = tx.get(ledger.journal_entries, entry_id, "journal entry")
    if entry["source"] in NOT_ON_STATEMENT:
        return
    by_gl: dict[str, str] = {}
    for acct in tx.all(select(bank_accounts.c.id, bank_accounts.c.gl_account_id).order_by(bank_accounts.c.id)):
        by_gl.setdefault(acct["gl_account_id"], acct["id"])
    if not by_gl:
        return
    for line in tx.rows(ledger.journal_lines, entry_id=entry_id, order_by=ledger.journal_lines.c.line_no):
        bank_account = by_gl.get(line["account_id"])
        amount = line["debit_cents"] - line["credit_cents"]
        if bank_account is None or amount == 0:
            continue
        kind = "opening" if entry["source"] == "opening" else ("deposit" if amount > 0 else "withdrawal")
        tx.insert(bank_statement_lines, bank_account_id=bank_account, date=entry["entry_date"], amount_cents=amount,
                  kind=kind, ref=entry["source_ref"] or entry_id, description=entry["memo"], payment_id=None)


ledger.register_posting_observer(report_cash_movement)
