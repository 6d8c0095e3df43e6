"""How much of an invoice is settled — the one place that says it.

Settled = cash plus discount allocated to the invoice by payments that were released (or have
cleared since); proposals do not count. Payments' own checks use these functions, and they are
registered with payables (`payables.settlement`) for open amounts, voiding, aging and the
``ap`` subledger.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, select

from ...kernel import prepared
from ..payables.settlement import Settlement, register_settlement
from .tables import payment_allocations, payments

#: Payment statuses whose allocations settle invoices.
SETTLING = ("released", "cleared")

_applied = payment_allocations.c.amount_cents + payment_allocations.c.discount_cents
_joined = payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id)


def _conn(tx_or_conn: Any) -> Any:
    return getattr(tx_or_conn, "conn", tx_or_conn)


def settled_cents(tx_or_conn: Any, invoice_id: str, as_of: str | None = None) -> int:
    """Cash plus discount applied to an invoice by released (or cleared) payments, released by
    `as_of` when given."""
    stmt = (select(func.coalesce(func.sum(_applied), 0)).select_from(_joined)
            .where(payment_allocations.c.invoice_id == invoice_id, payments.c.status.in_(SETTLING)))
    if as_of:
        stmt = stmt.where(payments.c.released_on <= as_of)
    return int(_conn(tx_or_conn).execute(stmt).scalar() or 0)


def settled_cents_by_invoice(tx_or_conn: Any, invoice_ids: list[str]) -> dict[str, int]:
    """`settled_cents` (no as_of) of many invoices in one grouped query; invoices with nothing
    settled are absent (read them as 0). For list pages, where one query per row dominates."""
    if not invoice_ids:
        return {}
    conn, params = _conn(tx_or_conn), {"ids": invoice_ids}
    rows = prepared.fixed_tuples(conn, _SETTLED_BY_INVOICE, params)   # on the driver, rendered once per length
    return {inv_id: int(total or 0) for inv_id, total in (rows if rows is not None
                                                          else conn.execute(_SETTLED_BY_INVOICE, params))}


# Built once, the ids bound per call (expanding): built per page it coerced every id and was keyed anew.
_SETTLED_BY_INVOICE = (select(payment_allocations.c.invoice_id, func.sum(_applied)).select_from(_joined)
                       .where(payment_allocations.c.invoice_id.in_(bindparam("ids", expanding=True)),
                              payments.c.status.in_(SETTLING))
                       .group_by(payment_allocations.c.invoice_id))


def settled_total_cents(tx_or_conn: Any, as_of: str | None = None) -> int:
    """Cash plus discount of every payment released by `as_of` (the paid side of open AP)."""
    stmt = select(func.coalesce(func.sum(_applied), 0)).select_from(_joined).where(payments.c.status.in_(SETTLING))
    if as_of:
        stmt = stmt.where(payments.c.released_on <= as_of)
    return int(_conn(tx_or_conn).execute(stmt).scalar() or 0)


def invoice_payments(tx_or_conn: Any, invoice_id: str) -> list[dict]:
    """Every payment (any status) with its allocation to the invoice, in payment id order."""
    stmt = (select(payments.c.id, payments.c.run_id, payments.c.status, payments.c.released_on, payments.c.cleared_on,
                   payment_allocations.c.amount_cents, payment_allocations.c.discount_cents)
            .select_from(_joined).where(payment_allocations.c.invoice_id == invoice_id).order_by(payments.c.id))
    return [dict(r) for r in _conn(tx_or_conn).execute(stmt).mappings()]


def live_payment(tx_or_conn: Any, invoice_id: str) -> dict | None:
    """A proposed, released or cleared payment of the invoice, or None."""
    stmt = (select(payments.c.id, payments.c.run_id, payments.c.status).select_from(_joined)
            .where(payment_allocations.c.invoice_id == invoice_id,
                   payments.c.status.in_(("proposed", "released", "cleared"))))
    row = _conn(tx_or_conn).execute(stmt).mappings().first()
    return dict(row) if row is not None else None


register_settlement(Settlement(settled_cents=settled_cents, settled_cents_by_invoice=settled_cents_by_invoice,
                               settled_total_cents=settled_total_cents, invoice_payments=invoice_payments,
                               live_payment=live_payment))
