"""The ledger's reports (trial-balance, control-ties, budget-vs-actual): they depend on the
ledger core only, so they are registered here rather than by a domain."""
from __future__ import annotations

from sqlalchemy import func, select

from ...kernel.errors import invalid
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .. import ledger
from .service import AsOfParams, ReportParams, as_of_of, register_report


def trial_balance_report(tx: Tx, params: AsOfParams) -> dict:
    """Balances per account as of a date, with totals and whether they balance."""
    return ledger.trial_balance(tx.conn, as_of_of(tx, params))


def control_ties_report(tx: Tx, params: AsOfParams) -> dict:
    """Each control account beside its subledger."""
    as_of = as_of_of(tx, params)
    rows = ledger.control_ties(tx.conn, as_of)
    return {"as_of": as_of, "rows": rows, "all_tied": all(r["tied"] for r in rows)}


class BudgetParams(ReportParams):
    """budget-vs-actual: one period (default: the business date's) or a range of periods."""

    period: str | None = None
    period_from: str | None = None
    period_to: str | None = None
    department: str | None = None


def budget_vs_actual_report(tx: Tx, params: BudgetParams) -> dict:
    """Budget per department and account beside the account's posted activity in the periods.

    Journal lines carry no department, so `actual` is the account's whole activity (debit
    positive); an account budgeted by two departments shows the same actual on both rows."""
    if params.period and (params.period_from or params.period_to):
        raise invalid("Give either period or period_from/period_to, not both.")
    if params.period:
        first = last = params.period
    elif params.period_from or params.period_to:
        first = params.period_from or params.period_to  # type: ignore[assignment]
        last = params.period_to or params.period_from  # type: ignore[assignment]
    else:
        first = last = tx.business_date[:7]
    pers = tx.all(select(ledger.periods).where(ledger.periods.c.id >= first, ledger.periods.c.id <= last)
                  .order_by(ledger.periods.c.id))
    if not pers:
        raise invalid(f"No periods between {first} and {last}.")
    start, end = pers[0]["start_date"], pers[-1]["end_date"]
    b = ledger.budgets
    stmt = (select(b.c.department_id, b.c.account_id, func.sum(b.c.amount_cents))
            .where(b.c.period_id >= first, b.c.period_id <= last)
            .group_by(b.c.department_id, b.c.account_id).order_by(b.c.department_id, b.c.account_id))
    if params.department:
        stmt = stmt.where(b.c.department_id == params.department)
    jl, je = ledger.journal_lines, ledger.journal_entries
    actual = {a: int(v or 0) for a, v in tx.conn.execute(
        select(jl.c.account_id, func.sum(jl.c.debit_cents - jl.c.credit_cents))
        .join(je, je.c.id == jl.c.entry_id)
        .where(je.c.status.in_(("posted", "reversed")), je.c.entry_date >= start, je.c.entry_date <= end)
        .group_by(jl.c.account_id))}
    names = {r["id"]: r["name"] for r in tx.rows(ledger.accounts)}
    rows = []
    for dept, acct, budget in tx.conn.execute(stmt):
        act = actual.get(acct, 0)
        rows.append({"department": dept, "account": acct, "name": names.get(acct), "budget": from_cents(budget),
                     "actual": from_cents(act), "variance": from_cents(int(budget or 0) - act)})
    return {"period_from": first, "period_to": last, "rows": rows}


register_report("trial-balance", trial_balance_report, AsOfParams, title="Trial balance")
register_report("control-ties", control_ties_report, AsOfParams, title="Control accounts against subledgers")
register_report("budget-vs-actual", budget_vs_actual_report, BudgetParams, title="Budget against actual")
