"""Receivables in the ledger: the ``ar`` and ``unapplied_cash`` subledgers, the customer's open
AR (registered with sales for its credit check), and the ar-aging report."""
from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select

from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .. import ledger, sales
from ..reports import AsOfParams, as_of_of, register_report
from ..sales import customers
from .tables import ar_invoices, cash_applications, cash_receipts


def _applied_until(conn, as_of: str | None, column) -> Any:
    stmt = select(column, func.sum(cash_applications.c.amount_cents)).group_by(column)
    if as_of:
        stmt = stmt.where(cash_applications.c.on_date <= as_of)
    return {k: int(v or 0) for k, v in conn.execute(stmt)}


def ar_subledger(conn, as_of: str | None) -> int:
    """Open receivables (debit positive): invoices up to `as_of` less applications up to it."""
    stmt = select(func.coalesce(func.sum(ar_invoices.c.total_cents), 0))
    apps = select(func.coalesce(func.sum(cash_applications.c.amount_cents), 0))
    if as_of:
        stmt = stmt.where(ar_invoices.c.invoice_date <= as_of)
        apps = apps.where(cash_applications.c.on_date <= as_of)
    return int(conn.execute(stmt).scalar() or 0) - int(conn.execute(apps).scalar() or 0)


def unapplied_cash_subledger(conn, as_of: str | None) -> int:
    """Unapplied customer cash (a liability, so negative debit-positive)."""
    stmt = select(func.coalesce(func.sum(cash_receipts.c.amount_cents), 0))
    apps = select(func.coalesce(func.sum(cash_applications.c.amount_cents), 0))
    if as_of:
        stmt = stmt.where(cash_receipts.c.receipt_date <= as_of)
        apps = apps.where(cash_applications.c.on_date <= as_of)
    return -(int(conn.execute(stmt).scalar() or 0) - int(conn.execute(apps).scalar() or 0))


ledger.register_subledger("ar", ar_subledger)


ledger.register_subledger("unapplied_cash", unapplied_cash_subledger)


def customer_open_ar_cents(conn, customer_id: str) -> int:
    """The customer's open invoice balance in cents."""
    stmt = select(func.coalesce(func.sum(ar_invoices.c.total_cents - ar_invoices.c.applied_cents), 0)).where(
        ar_invoices.c.customer_id == customer_id)
    return int(conn.execute(stmt).scalar() or 0)


BUCKETS = (("current", None, 0), ("1_30", 1, 30), ("31_60", 31, 60), ("61_90", 61, 90), ("over_90", 91, None))


def ar_aging(tx: Tx, params: Any) -> dict:
    """Open invoices as of a date by days past due, per customer, with unapplied cash."""
    as_of = as_of_of(tx, params)
    applied = _applied_until(tx.conn, as_of, cash_applications.c.invoice_id)
    stmt = select(ar_invoices).where(ar_invoices.c.invoice_date <= as_of).order_by(ar_invoices.c.customer_id,
                                                                                  ar_invoices.c.id)
    if params.customer_id:
        stmt = stmt.where(ar_invoices.c.customer_id == params.customer_id)
    per: dict[str, dict[str, Any]] = {}
    totals = {b[0]: 0 for b in BUCKETS}
    invoices = []
    for inv in tx.all(stmt):
        open_c = inv["total_cents"] - applied.get(inv["id"], 0)
        if open_c == 0:
            continue
        days = (dt.date.fromisoformat(as_of) - dt.date.fromisoformat(inv["due_date"])).days
        bucket = next(name for name, lo, hi in BUCKETS if (lo is None or days >= lo) and (hi is None or days <= hi))
        c = per.setdefault(inv["customer_id"], {b[0]: 0 for b in BUCKETS})
        c[bucket] += open_c
        totals[bucket] += open_c
        invoices.append({"invoice_id": inv["id"], "customer_id": inv["customer_id"], "due_date": inv["due_date"],
                         "days_past_due": max(days, 0), "bucket": bucket, "open": from_cents(open_c)})
    rc_applied = _applied_until(tx.conn, as_of, cash_applications.c.receipt_id)
    unapplied: dict[str, int] = {}
    for rc in tx.all(select(cash_receipts).where(cash_receipts.c.receipt_date <= as_of)):
        left = rc["amount_cents"] - rc_applied.get(rc["id"], 0)
        if left and (not params.customer_id or rc["customer_id"] == params.customer_id):
            unapplied[rc["customer_id"]] = unapplied.get(rc["customer_id"], 0) + left
    names = {r["id"]: r["name"] for r in tx.all(select(customers.c.id, customers.c.name))}
    rows = [{"customer_id": cid, "name": names.get(cid), **{k: from_cents(v) for k, v in b.items()},
             "total": from_cents(sum(b.values())), "unapplied_cash": from_cents(unapplied.get(cid, 0))}
            for cid, b in sorted(per.items())]
    return {"as_of": as_of, "rows": rows, "invoices": invoices,
            "totals": {**{k: from_cents(v) for k, v in totals.items()}, "total": from_cents(sum(totals.values())),
                       "unapplied_cash": from_cents(sum(unapplied.values()))}}


sales.register_open_ar(customer_open_ar_cents)


class ArAgingParams(AsOfParams):
    """ar-aging: as of a date, optionally for one customer."""

    customer_id: str | None = None


register_report("ar-aging", ar_aging, ArAgingParams, title="Receivables aging by days past due")
