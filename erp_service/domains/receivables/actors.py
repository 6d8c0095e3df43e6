"""The customer actor: customers pay open invoices by their profile and send scheduled orders."""
from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy import select

from ...kernel.clock import add_days
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ...sim import Day, actor, sim_log
from ..comms import deliver, make_pdf
from ..sales import customers
from .service import CashReceiptIn, record_receipt
from .tables import ar_invoices


def _customer(tx: Tx, customer_id: str) -> dict | None:
    return tx.find(customers, id=customer_id)


def _remit(tx: Tx, body: dict) -> dict:
    # The body is validated inside the audited write, like a request's.
    return record_receipt(tx, CashReceiptIn(**body))


def _profile(world: Any, customer_id: str) -> dict | None:
    profiles = world.section("customers", {})
    prof = profiles.get(customer_id) if isinstance(profiles, dict) else None
    if prof is None:
        default = world.section("customer_default", {})
        prof = default or None
    return prof


def _reference(prof: dict, inv: dict) -> str:
    ref = prof.get("reference", "invoice")
    if ref == "invoice":
        return inv["id"]
    if ref == "po":
        return inv["customer_po"] or inv["so_id"] or ""
    if ref == "wrong":
        # A plausible but wrong number: the digits of the invoice id reversed.
        prefix, _, num = inv["id"].rpartition("-")
        return f"{prefix}-{num[::-1]}"
    return str(ref)


@actor("customers")
def _customers(day: Day) -> None:
    """Customers pay open invoices by profile and send scheduled orders (see module docstring)."""
    profiles = day.world.section("customers", {})
    default = day.world.section("customer_default", {})
    if not profiles and not default:
        return
    # Scheduled orders, by email with a PDF purchase order: on the first workday on or after
    # the date, once.
    sent = set(day.look(lambda tx: [r["ref"] for r in tx.all(select(sim_log.c.ref).where(
        sim_log.c.kind == "customer_order"))]))
    for cid in sorted(profiles) if isinstance(profiles, dict) else []:
        for i, order in enumerate(profiles[cid].get("orders", [])):
            if str(order.get("on", "9999")) > day.date or f"{cid}:{i}" in sent:
                continue
            cust = day.look(partial(_customer, customer_id=cid))
            if cust is None:
                raise RuntimeError(f"world names unknown customer {cid!r}")
            po = order.get("customer_po", f"{cid}-PO-{i + 1}")
            lines = [f"{l['qty']} x {l['item_id']}" for l in order.get("lines", [])]
            pdf = make_pdf(f"PURCHASE ORDER {po}", [cust["name"], f"Date: {day.date}", ""] + lines)
            day.act("sys-mail", "msg.deliver", "/sim/customer-orders", {"customer": cid, "po": po},
                    partial(deliver, box=order.get("box", "sales"),
                            sender=cust["email"] or f"{cust['id']}@customer.example", subject=f"Purchase order {po}",
                            body="Please ship the following:\n" + "\n".join(lines), attachments=[(f"{po}.pdf", pdf)]))
            day.log(f"customer:{cid}", "customer_order", f"{cid}:{i}", {"customer_po": po, "lines": order.get("lines")})
    # Payments of open invoices.
    paid = set(day.look(lambda tx: [r["ref"] for r in tx.all(select(sim_log.c.ref).where(
        sim_log.c.kind == "customer_payment"))]))
    open_invoices = day.look(lambda tx: tx.all(select(ar_invoices).where(
        ar_invoices.c.status.in_(("open", "partially_paid"))).order_by(ar_invoices.c.id)))
    for inv in open_invoices:
        if inv["id"] in paid:
            continue
        prof = _profile(day.world, inv["customer_id"])
        if not prof or prof.get("pays", "on_time") == "never":
            continue
        when = inv["due_date"]
        if prof.get("pays") == "late":
            when = add_days(when, int(prof.get("days_late", 15)))
        if day.date < when:
            continue
        cents = inv["total_cents"] - inv["applied_cents"]
        if prof.get("pays") == "short":
            cents -= int(round(cents * float(prof.get("short_pct", 5.0)) / 100))
        if cents <= 0:
            continue
        payer = prof.get("payer") or inv["customer_id"]
        ref = _reference(prof, inv)
        body = {"customer_id": payer, "amount": from_cents(cents), "reference": ref, "method": "ach"}
        day.act("sys-bank", "ar.remit", "/sim/customer-payments", body,
                partial(_remit, body=body))
        payer_row = day.look(partial(_customer, customer_id=payer)) or {}
        text = f"We have sent {from_cents(cents):.2f} by ACH, reference {ref}."
        if prof.get("pays") == "short":
            text += f" Short paid: {prof.get('short_reason', 'see attached')}."
        day.act("sys-mail", "msg.deliver", "/sim/remittance", {"invoice": inv["id"]},
                partial(deliver, box="ar", sender=payer_row.get("email") or f"{payer}@customer.example",
                        subject=f"Remittance advice {ref}", body=text))
        day.log(f"customer:{inv['customer_id']}", "customer_payment", inv["id"],
                {"payer": payer, "amount_cents": cents, "reference": ref})
