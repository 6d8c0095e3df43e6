"""The sales-margin report: revenue of invoiced lines, the shipped cost of those lines, and the
margin, by customer and item (here because it reads AR invoices, which sit above sales)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ...kernel.dates import IsoDate
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from ..reports import ReportParams, register_report
from .tables import ar_invoice_lines, ar_invoices


def sales_margin(tx: Tx, params: Any) -> dict:
    """Revenue (invoiced lines), cost (shipped cost of those lines) and margin, by customer and item."""
    start = params.date_from.isoformat() if params.date_from else "0000-01-01"
    end = params.date_to.isoformat() if params.date_to else tx.business_date
    stmt = (select(ar_invoices.c.customer_id, ar_invoice_lines.c.item_id,
                   func.sum(ar_invoice_lines.c.qty).label("qty"),
                   func.sum(ar_invoice_lines.c.amount_cents).label("revenue"),
                   func.sum(ar_invoice_lines.c.cost_cents).label("cost"))
            .join(ar_invoices, ar_invoices.c.id == ar_invoice_lines.c.invoice_id)
            .where(ar_invoices.c.invoice_date >= start, ar_invoices.c.invoice_date <= end,
                   ar_invoices.c.status != "void")
            .group_by(ar_invoices.c.customer_id, ar_invoice_lines.c.item_id)
            .order_by(ar_invoices.c.customer_id, ar_invoice_lines.c.item_id))
    if params.customer_id:
        stmt = stmt.where(ar_invoices.c.customer_id == params.customer_id)
    rows, rev_t, cost_t = [], 0, 0
    for r in tx.all(stmt):
        rev, cost = int(r["revenue"] or 0), int(r["cost"] or 0)
        rev_t, cost_t = rev_t + rev, cost_t + cost
        rows.append({"customer_id": r["customer_id"], "item_id": r["item_id"], "qty": q4(r["qty"] or 0),
                     "revenue": from_cents(rev), "cost": from_cents(cost), "margin": from_cents(rev - cost),
                     "margin_pct": round(100 * (rev - cost) / rev, 2) if rev else None})
    return {"date_from": start, "date_to": end, "rows": rows, "total_revenue": from_cents(rev_t),
            "total_cost": from_cents(cost_t), "total_margin": from_cents(rev_t - cost_t),
            "margin_pct": round(100 * (rev_t - cost_t) / rev_t, 2) if rev_t else None}


class SalesMarginParams(ReportParams):
    """sales-margin: a date range, optionally one customer."""

    date_from: IsoDate | None = None
    date_to: IsoDate | None = None
    customer_id: str | None = None


register_report("sales-margin", sales_margin, SalesMarginParams, title="Sales margin by customer and item")
