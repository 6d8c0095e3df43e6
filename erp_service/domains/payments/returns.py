"""A released payment the bank returned: recording the return in the books.

The bank reports a return as a ``return`` statement line naming the payment
(`banking.actors`). `POST /payments/{id}/record-return` then puts the payment back where it
came from: a system entry (source ``bank``, so the feed does not report it again; source_ref
the statement line, ``BSL-<id>``) dated the line's date reverses the payment's own release
entry — cash back, the vendor's payable back (and any discount taken) — the payment becomes
``returned`` (it no longer settles anything) and each invoice it had paid is ``approved`` again,
open for the next run. Refused unless the bank has reported the return (a return cannot be
invented) and the payment has cleared; a payment is returned once.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from ...kernel.errors import refused
from ...kernel.tx import Tx
from .. import ledger
from ..banking import bank_statement_lines, cash_account_of
from ..banking.actors import register_returnable
from ..banking.booking import SOURCE, line_ref
from ..payables import ap_invoices
from .tables import payment_allocations, payments
from .views import payment_out


def record_return(tx: Tx, payment_id: str) -> dict[str, Any]:
    """Record the bank's return of a cleared payment (see the module docstring)."""
    p = tx.get(payments, payment_id, "payment")
    line = tx.one(select(bank_statement_lines).where(bank_statement_lines.c.kind == "return",
                                                     bank_statement_lines.c.payment_id == payment_id)
                  .order_by(bank_statement_lines.c.id))
    if p["status"] == "returned":
        raise refused("already_returned", f"Payment {payment_id} is already recorded as returned.")
    if line is None:
        raise refused("no_return_reported", f"The bank has not reported payment {payment_id} as returned; "
                                            "only a return on the statement is recorded.")
    cash = cash_account_of(tx, p["bank_account_id"])
    tx.set_status("payment", payments, payment_id, "returned", f"returned by the bank ({line['ref']})",
                  allowed_from=["cleared"])
    allocs = tx.rows(payment_allocations, payment_id=payment_id, order_by=payment_allocations.c.invoice_id)
    memo = f"Payment {payment_id} returned by the bank ({line['ref']})"
    lines = [ledger.Line("rule:ap", -(a["amount_cents"] + a["discount_cents"]), memo, "vendor", p["vendor_id"],
                         a["invoice_id"]) for a in allocs]
    lines.append(ledger.Line(cash, p["amount_cents"], memo, "vendor", p["vendor_id"], payment_id))
    lines.append(ledger.Line("rule:purchase_discounts", p["discount_cents"], memo, "vendor", p["vendor_id"],
                             payment_id))
    ledger.post(tx, source=SOURCE, source_ref=line_ref(line["id"]), memo=memo, entry_date=line["date"], lines=lines)
    for a in allocs:
        inv = tx.get(ap_invoices, a["invoice_id"])
        if inv["status"] == "paid":
            tx.set_status("ap_invoice", ap_invoices, inv["id"], "approved", f"payment {payment_id} returned",
                          allowed_from=["paid"])
    tx.primary = ("payment", payment_id)
    return payment_out(tx, tx.get(payments, payment_id))


def _returnable(tx: Tx, payment_id: str) -> int | None:
    """A cleared payment's cash amount (what the bank can return), else None."""
    p = tx.find(payments, id=payment_id)
    return int(p["amount_cents"]) if p is not None and p["status"] == "cleared" else None


register_returnable(_returnable)
