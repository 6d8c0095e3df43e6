"""The cash-position report: per bank account, book and statement balances, payments in
transit and the runs not yet released."""
from __future__ import annotations

from sqlalchemy import select

from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .. import ledger
from ..banking import bank_account_out, bank_accounts
from ..reports import AsOfParams, as_of_of, register_report
from .service import run_total_cents
from .tables import payment_runs, payments


def cash_position_report(tx: Tx, params: AsOfParams) -> dict:
    """Per bank account: book balance, statement balance, released-not-cleared payments, and the
    runs not yet released (scheduled) with what would remain after them."""
    as_of = as_of_of(tx, params)
    out = []
    for acct in tx.rows(bank_accounts):
        view = bank_account_out(tx, acct, as_of)
        in_transit = tx.all(select(payments.c.id, payments.c.vendor_id, payments.c.amount_cents, payments.c.released_on)
                            .where(payments.c.bank_account_id == acct["id"], payments.c.status.in_(("released", "cleared")),
                                   payments.c.released_on <= as_of)
                            .where((payments.c.cleared_on.is_(None)) | (payments.c.cleared_on > as_of))
                            .order_by(payments.c.id))
        scheduled = []
        for run in tx.all(select(payment_runs).where(payment_runs.c.bank_account_id == acct["id"],
                                                     payment_runs.c.status.in_(("draft", "submitted", "approved")))
                          .order_by(payment_runs.c.id)):
            scheduled.append({"run": run["id"], "status": run["status"], "pay_date": run["pay_date"],
                              "total": from_cents(run_total_cents(tx, run["id"]))})
        sched_total = sum(round(s["total"] * 100) for s in scheduled)
        book = ledger.account_balances(tx.conn, as_of).get(acct["gl_account_id"], 0)
        view.update({
            "released_not_cleared": [{"payment": p["id"], "vendor": p["vendor_id"], "amount": from_cents(p["amount_cents"]),
                                      "released_on": p["released_on"]} for p in in_transit],
            "released_not_cleared_total": from_cents(sum(p["amount_cents"] for p in in_transit)),
            "scheduled": scheduled, "scheduled_total": from_cents(sched_total),
            "after_scheduled": from_cents(book - sched_total)})
        out.append(view)
    return {"as_of": as_of, "accounts": out}


register_report("cash-position", cash_position_report, AsOfParams, title="Cash position by bank account")
