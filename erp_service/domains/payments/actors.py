"""Payments' counterparties.

- The bank (`@actor("bank")`): every workday, payments released before today clear — a
  statement line is written and the payment becomes ``cleared``.
- The payment-run approver (`@actor("approvers")`), from ``world["payment_run_approver"]``,
  e.g. ``{"user": "priya.raman", "approve_after_days": 1, "release": true}``: approves
  submitted runs once `approve_after_days` calendar days have passed since submission, and
  releases approved runs when ``release`` is true. Refusals (limit, changed account, a hold
  placed meanwhile) are audited and the run stays where it is.
"""
from __future__ import annotations

import datetime as dt
from functools import partial

from sqlalchemy import select

from ...kernel.tx import Tx
from ...sim import Day, actor
from ..banking import bank_statement_lines
from .service import approve_run, release_run
from .tables import payment_runs, payments


def clear_payment(tx: Tx, payment_id: str) -> dict:
    """The bank reports a released payment: statement line, payment cleared."""
    p = tx.get(payments, payment_id, "payment")
    tx.set_status("payment", payments, payment_id, "cleared", "cleared by the bank", allowed_from=["released"],
                  cleared_on=tx.business_date)
    tx.insert(bank_statement_lines, bank_account_id=p["bank_account_id"], date=tx.business_date,
              amount_cents=-p["amount_cents"], kind="payment", ref=payment_id,
              description=f"ACH {p['vendor_id']} {payment_id}", payment_id=payment_id)
    return {"payment": payment_id, "status": "cleared"}


@actor("bank")
def bank_clears_payments(day: Day) -> None:
    """Payments released before today clear today (the next business day)."""
    user = day.world.section("actors").get("bank", "sys-bank") if isinstance(day.world.section("actors"), dict) \
        else "sys-bank"
    due = day.look(lambda tx: [r["id"] for r in tx.all(
        select(payments.c.id).where(payments.c.status == "released", payments.c.released_on < day.date)
        .order_by(payments.c.id))])
    for pid in due:
        day.act(user, "bank.post", f"/payments/{pid}/clear", None, partial(clear_payment, payment_id=pid))


@actor("approvers")
def payment_run_approver(day: Day) -> None:
    """The controller approves submitted runs after a delay and releases approved ones."""
    cfg = day.world.section("payment_run_approver")
    if not cfg or not cfg.get("user"):
        return
    user, wait = cfg["user"], int(cfg.get("approve_after_days", 1))
    release = bool(cfg.get("release", True))
    runs = day.look(lambda tx: tx.all(select(payment_runs.c.id, payment_runs.c.status, payment_runs.c.submitted_on)
                                      .where(payment_runs.c.status.in_(("submitted", "approved")))
                                      .order_by(payment_runs.c.id)))
    for run in runs:
        status = run["status"]
        if status == "submitted":
            ready = (dt.date.fromisoformat(run["submitted_on"]) + dt.timedelta(days=wait)).isoformat() <= day.date
            if not ready:
                continue
            out = day.act(user, "pay.approve", f"/payment-runs/{run['id']}/approve", None,
                          partial(approve_run, run_id=run["id"]))
            status = "approved" if out is not None else status
        if status == "approved" and release:
            day.act(user, "pay.release", f"/payment-runs/{run['id']}/release", None,
                    partial(release_run, run_id=run["id"]))
