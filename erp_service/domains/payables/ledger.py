"""Payables in the ledger: the ``ap`` subledger (open validated invoices minus payments
released and discounts taken), the GRNI that invoice validation clears (which receiving's GRNI
subledger subtracts, registered with receiving), and the ap-aging report."""
from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import and_, func, or_, select

from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .. import ledger, receiving
from ..reports import AsOfParams, as_of_of, register_report
from .match import invoiced_qty
from .settlement import settlement
from .tables import ap_invoice_lines, ap_invoices


def _validated_as_of(as_of: str | None) -> Any:
    cond: list[Any] = [ap_invoices.c.validated_on.is_not(None)]
    if as_of:
        cond += [ap_invoices.c.validated_on <= as_of,
                 or_(ap_invoices.c.voided_on.is_(None), ap_invoices.c.voided_on > as_of)]
    else:
        cond.append(ap_invoices.c.voided_on.is_(None))
    return and_(*cond)



def ap_subledger(conn: Any, as_of: str | None) -> int:
    """Open AP (debit positive, so a credit balance is negative): validated invoices not voided
    by `as_of`, less cash and discounts of payments released by `as_of`."""
    billed = int(conn.execute(select(func.coalesce(func.sum(ap_invoices.c.total_cents), 0))
                              .where(_validated_as_of(as_of))).scalar() or 0)
    return -(billed - settlement().settled_total_cents(conn, as_of))


def grni_cleared_cents(conn, as_of: str | None = None, po_id: str | None = None, po_line: int | None = None) -> int:
    """GRNI debited by invoice validation (billed qty × PO price) of invoices validated and not
    voided by `as_of`, optionally for one PO or PO line."""
    stmt = (select(func.coalesce(func.sum(ap_invoice_lines.c.grni_cents), 0))
            .select_from(ap_invoice_lines.join(ap_invoices, ap_invoices.c.id == ap_invoice_lines.c.invoice_id))
            .where(_validated_as_of(as_of), ap_invoice_lines.c.grni_cents.is_not(None)))
    if po_id is not None:
        stmt = stmt.where(ap_invoices.c.po_id == po_id)
    if po_line is not None:
        stmt = stmt.where(ap_invoice_lines.c.po_line == po_line)
    return int(conn.execute(stmt).scalar() or 0)


ledger.register_subledger("ap", ap_subledger)

receiving.register_invoice_facts(grni_cleared_cents=grni_cleared_cents, invoiced_qty=invoiced_qty)


AGING_BUCKETS = (("current", None, 0), ("1-30", 1, 30), ("31-60", 31, 60), ("61-90", 61, 90), ("90+", 91, None))


class AgingParams(AsOfParams):
    """ap-aging: as of a date, optionally for one vendor."""

    vendor: str | None = None


def ap_aging_report(tx: Tx, params: AgingParams) -> dict:
    """Open validated invoices as of a date, bucketed by days past due."""
    as_of = as_of_of(tx, params)
    stmt = select(ap_invoices).where(_validated_as_of(as_of)).order_by(ap_invoices.c.vendor_id, ap_invoices.c.id)
    if params.vendor:
        stmt = stmt.where(ap_invoices.c.vendor_id == params.vendor)
    rows, totals = [], {b[0]: 0 for b in AGING_BUCKETS}
    by_vendor: dict[str, dict[str, int]] = {}
    day = dt.date.fromisoformat(as_of)
    settled = settlement().settled_cents
    for inv in tx.all(stmt):
        open_amt = inv["total_cents"] - settled(tx, inv["id"], as_of)
        if open_amt == 0:
            continue
        late = (day - dt.date.fromisoformat(inv["due_date"])).days
        bucket = next(b for b, lo, hi in AGING_BUCKETS if (lo is None or late >= lo) and (hi is None or late <= hi))
        totals[bucket] += open_amt
        vend = by_vendor.setdefault(inv["vendor_id"], {b[0]: 0 for b in AGING_BUCKETS})
        vend[bucket] += open_amt
        rows.append({"invoice": inv["id"], "vendor": inv["vendor_id"], "invoice_no": inv["invoice_no"],
                     "invoice_date": inv["invoice_date"], "due_date": inv["due_date"], "days_past_due": max(late, 0),
                     "bucket": bucket, "open": from_cents(open_amt), "status": inv["status"],
                     "discount_date": inv["discount_date"], "discount": from_cents(inv["discount_cents"])})
    return {"as_of": as_of, "rows": rows,
            "vendors": [{"vendor": v, **{b: from_cents(c) for b, c in t.items()},
                         "total": from_cents(sum(t.values()))} for v, t in sorted(by_vendor.items())],
            "totals": {**{b: from_cents(c) for b, c in totals.items()}, "total": from_cents(sum(totals.values()))}}


register_report("ap-aging", ap_aging_report, AgingParams, title="Accounts payable aging by due date")
