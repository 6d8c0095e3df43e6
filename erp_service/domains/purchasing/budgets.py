"""Budget availability with open commitments: the report an approver reads before approving a
requisition (`GET /reports/budget-availability`).

Per department and expense account, for one month (default: the business date's):

    available = budget − actual − committed

- budget: the `budgets` row of the department, account and period;
- actual: what is posted to the account in that month (journal lines carry no department, so an
  account's activity counts against every department budgeting it, as in budget-vs-actual);
- committed: what the department has approved but not yet received — approved requisition lines
  not yet ordered (estimate), plus open lines of sent purchase orders that order the
  department's requisition lines (quantity still to receive × PO price). Received value is
  already posted, so it is in `actual`, never twice.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ...kernel.errors import invalid
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .. import ledger
from ..reports import ReportParams, register_report
from .service import line_cents
from .tables import po_lines, purchase_orders, requisition_lines, requisitions

OPEN_PO_STATUSES = ("sent", "partially_received")


class BudgetAvailabilityParams(ReportParams):
    """budget-availability: one month (YYYY-MM, default the business date's), optionally one
    department and one account."""

    period: str | None = None
    department: str | None = None
    account: str | None = None


def committed_cents(tx: Tx, department: str, account: str) -> dict[str, int]:
    """The department's open commitments on `account`: approved requisition lines not yet on a
    PO, and the unreceived part of open PO lines ordering its requisition lines."""
    unordered = tx.scalar(
        select(func.coalesce(func.sum(requisition_lines.c.amount_cents), 0))
        .join(requisitions, requisitions.c.id == requisition_lines.c.requisition_id)
        .where(requisitions.c.department_id == department, requisitions.c.status == "approved",
               requisition_lines.c.account_id == account, requisition_lines.c.po_id.is_(None))) or 0
    # A PO line may order several requisition lines (consolidation): count each PO line once,
    # for the department of the requisitions it orders.
    ordered_lines = (select(requisition_lines.c.po_id, requisition_lines.c.po_line)
                     .join(requisitions, requisitions.c.id == requisition_lines.c.requisition_id)
                     .where(requisitions.c.department_id == department, requisition_lines.c.po_id.is_not(None))
                     .distinct())
    on_order = 0
    for po_id, po_line in tx.conn.execute(ordered_lines):
        row = tx.one(select(po_lines.c.qty, po_lines.c.qty_received, po_lines.c.unit_price, po_lines.c.status,
                            po_lines.c.account_id, purchase_orders.c.status.label("po_status"))
                     .join(purchase_orders, purchase_orders.c.id == po_lines.c.po_id)
                     .where(po_lines.c.po_id == po_id, po_lines.c.line_no == po_line))
        if row is None or row["account_id"] != account or row["status"] != "open" \
                or row["po_status"] not in OPEN_PO_STATUSES:
            continue
        left = max(float(row["qty"]) - float(row["qty_received"]), 0.0)
        on_order += line_cents(left, row["unit_price"])
    return {"requisitions": int(unordered), "purchase_orders": on_order}


def budget_availability_report(tx: Tx, params: BudgetAvailabilityParams) -> dict[str, Any]:
    """Budget, actual, open commitments and what is left, per department and account."""
    period_id = params.period or tx.business_date[:7]
    period = tx.find(ledger.periods, id=period_id)
    if period is None:
        raise invalid(f"No period {period_id} (give period as YYYY-MM).")
    b = ledger.budgets
    stmt = (select(b.c.department_id, b.c.account_id, b.c.amount_cents).where(b.c.period_id == period_id)
            .order_by(b.c.department_id, b.c.account_id))
    if params.department:
        stmt = stmt.where(b.c.department_id == params.department)
    if params.account:
        stmt = stmt.where(b.c.account_id == params.account)
    jl, je = ledger.journal_lines, ledger.journal_entries
    rows = []
    for dept, acct, budget in tx.conn.execute(stmt):
        actual = int(tx.scalar(
            select(func.coalesce(func.sum(jl.c.debit_cents - jl.c.credit_cents), 0))
            .join(je, je.c.id == jl.c.entry_id)
            .where(jl.c.account_id == acct, je.c.status.in_(("posted", "reversed")),
                   je.c.entry_date >= period["start_date"], je.c.entry_date <= period["end_date"])) or 0)
        committed = committed_cents(tx, dept, acct)
        total_committed = committed["requisitions"] + committed["purchase_orders"]
        rows.append({"department": dept, "account": acct, "budget": from_cents(budget), "actual": from_cents(actual),
                     "committed_requisitions": from_cents(committed["requisitions"]),
                     "committed_purchase_orders": from_cents(committed["purchase_orders"]),
                     "committed": from_cents(total_committed),
                     "available": from_cents(int(budget) - actual - total_committed)})
    return {"period": period_id, "rows": rows}


register_report("budget-availability", budget_availability_report, BudgetAvailabilityParams,
                title="Budget available after actuals and open commitments")
