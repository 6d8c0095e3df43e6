"""Banking: the company's bank accounts (each tied to a GL cash account; its book balance *is*
the GL balance) and the bank statement (`bank_statement_lines`, what the bank reports: every
cash posting on its day, payments when they clear — see `feed`), so the statement balance is
the book balance less payments in transit.

The bank's own items — fees, interest, returned payments from ``world["bank_items"]`` — are
banking's counterparty (`actors`); the company books them with `booking` (fees, interest) and
`payments.record_return`. The bank clearing released payments onto the statement and the payment-run
approver are payments' counterparties (`payments.actors`); the cash-position report is
payments' too, since it is about runs and payments in transit.
"""
from __future__ import annotations

from . import actors, feed, world  # noqa: F401  (the bank's own items; its side of every cash posting; its world section)
from .routes import router
from .service import bank_account_out, cash_account_of, statement_balance_cents
from .tables import bank_accounts, bank_statement_lines

__all__ = ["router", "bank_account_out", "cash_account_of", "statement_balance_cents", "bank_accounts",
           "bank_statement_lines"]
