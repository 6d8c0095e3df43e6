"""Company bank accounts, the bank statement, and the two counterparties of the payment cycle.

- `bank_accounts`: the company's accounts (e.g. OPER), each tied to a GL cash account; its
  book balance *is* the GL balance. `bank_statement_lines` is what the bank reports.
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

from fastapi import APIRouter, Depends
from pydantic import BaseModel
from sqlalchemy import Column, Integer, String, Table, Text, func, select

from ..http.api import Api, Envelope, Page, page_params, read_api
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import from_cents
from ..kernel.schema import metadata
from ..kernel.tx import Tx, register_object
from ..sim import Day, SectionModel, actor, world_section
from . import ledger
from .payments import approve_run, payment_runs, payments, release_run, run_total_cents
from .reports import AsOfParams, as_of_of, register_report

bank_accounts = Table(
    "bank_accounts", metadata,
    Column("id", String, primary_key=True),              # OPER, PAYROLL, ...
    Column("name", String, nullable=False),
    Column("bank_name", String),
    Column("account_number", String),
    Column("gl_account_id", String, nullable=False),
    Column("status", String, nullable=False, default="active"),
)

bank_statement_lines = Table(
    "bank_statement_lines", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("bank_account_id", String, nullable=False, index=True),
    Column("date", String, nullable=False),
    Column("amount_cents", Integer, nullable=False),     # deposits positive, payments negative
    Column("kind", String, nullable=False),              # opening | payment | deposit | fee | return
    Column("ref", String),
    Column("description", Text),
    Column("payment_id", String),
)

register_object("bank_account", bank_accounts)


class PaymentRunApprover(SectionModel):
    """``payment_run_approver``: who approves submitted payment runs, after how many calendar
    days, and whether they release approved runs."""

    user: str | None = None
    approve_after_days: int = 1
    release: bool = True


world_section("payment_run_approver", PaymentRunApprover, owner=__name__,
              doc="who approves and releases submitted payment runs")


def statement_balance_cents(conn, bank_account_id: str, as_of: str | None = None) -> int:
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


# Counterparties -----------------------------------------------------------------------------------

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
        day.act(user, "bank.post", f"/payments/{pid}/clear", None, lambda tx, pid=pid: clear_payment(tx, pid))


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
                          lambda tx, rid=run["id"]: approve_run(tx, rid))
            status = "approved" if out is not None else status
        if status == "approved" and release:
            day.act(user, "pay.release", f"/payment-runs/{run['id']}/release", None,
                    lambda tx, rid=run["id"]: release_run(tx, rid))


# cash-position report -------------------------------------------------------------------------------

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


# Routes -------------------------------------------------------------------------------------------

class BankAccountOut(BaseModel):
    id: str
    name: str
    bank_name: str | None = None
    account_number: str | None = None
    gl_account: str
    status: str
    balance: float
    statement_balance: float


class StatementLineOut(BaseModel):
    id: int
    bank_account_id: str
    date: str
    amount: float
    kind: str
    ref: str | None = None
    description: str | None = None
    payment_id: str | None = None


router = APIRouter(tags=["banking"])


@router.get("/bank-accounts", response_model=Envelope[Page[BankAccountOut]],
            summary="Company bank accounts with book (GL) and statement balances")
def list_bank_accounts(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(bank_accounts).order_by(bank_accounts.c.id), page,
                                        render=lambda r: bank_account_out(tx, r)))


@router.get("/bank-statement-lines", response_model=Envelope[Page[StatementLineOut]],
            summary="Bank statement lines (filters: bank_account, kind, date_from, date_to)")
def list_statement_lines(bank_account: str | None = None, kind: str | None = None, date_from: dt.date | None = None,
                         date_to: dt.date | None = None, page: PageRequest = Depends(page_params),
                         api: Api = Depends(read_api)):
    def render(r: dict) -> dict:
        return {**{k: v for k, v in r.items() if k != "amount_cents"}, "amount": from_cents(r["amount_cents"])}

    def fn(tx: Tx):
        stmt = select(bank_statement_lines).order_by(bank_statement_lines.c.id)
        if date_from:
            stmt = stmt.where(bank_statement_lines.c.date >= date_from.isoformat())
        if date_to:
            stmt = stmt.where(bank_statement_lines.c.date <= date_to.isoformat())
        return paginate(tx, stmt, page, render=render, bank_account_id=bank_account, kind=kind)
    return api.read(fn)
