"""Receivables' service: invoicing a shipment, recording cash receipts (unapplied until applied)
and applying them to invoices."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...http.api import In
from ...kernel.clock import add_days
from ...kernel.errors import invalid, refused
from ...kernel.money import Amount, from_cents, q4, to_cents
from ...kernel.tx import Tx
from .. import ledger
from ..sales import amount_cents, get_customer, sales_orders, shipment_lines, shipments, so_lines
from .tables import ar_invoice_lines, ar_invoices, cash_applications, cash_receipts


class CashReceiptIn(In):
    customer_id: str = Field(..., min_length=1)
    amount: Amount = Field(..., gt=0)
    reference: str | None = Field(None, max_length=200)
    method: Literal["check", "ach", "wire"] = "check"
    note: str | None = Field(None, max_length=2000)


class ApplicationIn(In):
    invoice_id: str = Field(..., min_length=1)
    amount: Amount = Field(..., gt=0)


class ApplyIn(In):
    applications: list[ApplicationIn] = Field(..., min_length=1, max_length=200)


def invoice_shipment(tx: Tx, shipment_id: str) -> dict[str, Any]:
    """Bill a shipment at the order's prices (plus tax for taxable customers) and post it."""
    sh = tx.get(shipments, shipment_id, "shipment")
    if sh["invoice_id"] or sh["status"] != "shipped":
        raise refused("already_invoiced", f"Shipment {shipment_id} is already invoiced ({sh['invoice_id']}).",
                      invoice_id=sh["invoice_id"])
    cust = get_customer(tx, sh["customer_id"])
    so = tx.get(sales_orders, sh["so_id"], "sales order")
    term = tx.find(ledger.terms, id=cust["terms"])
    net_days = term["net_days"] if term else 30
    grouped: dict[int, dict[str, Any]] = {}
    for l in tx.rows(shipment_lines, shipment_id=shipment_id):
        g = grouped.setdefault(l["so_line"], {"qty": 0.0, "cost": 0, "item_id": l["item_id"]})
        g["qty"] = q4(g["qty"] + l["qty"])
        g["cost"] += l["cost_cents"]
    inv = tx.create_doc("ar_invoice", ar_invoices, "ARINV", "open", customer_id=cust["id"], shipment_id=shipment_id,
                        so_id=so["id"], customer_po=so["customer_po"], invoice_date=tx.business_date,
                        due_date=add_days(tx.business_date, net_days), terms=cust["terms"], subtotal_cents=0,
                        tax_cents=0, total_cents=0, applied_cents=0)
    subtotal = 0
    for n, (so_line, g) in enumerate(sorted(grouped.items()), start=1):
        line = tx.find(so_lines, so_id=so["id"], line_no=so_line)
        assert line is not None  # a shipment line always names a line of its order
        amt = amount_cents(g["qty"], line["unit_price"])
        subtotal += amt
        tx.insert(ar_invoice_lines, invoice_id=inv["id"], line_no=n, so_line=so_line, item_id=g["item_id"],
                  description=None, qty=g["qty"], unit_price=line["unit_price"], amount_cents=amt,
                  cost_cents=g["cost"])
    tax = int(round(subtotal * float(cust["tax_rate"] or 0) / 100)) if cust["tax_status"] == "taxable" else 0
    total = subtotal + tax
    je = ledger.post(tx, source="ar", source_ref=inv["id"], memo=f"Customer invoice {inv['id']} ({cust['id']})",
                     lines=[ledger.Line("rule:ar", total, party_type="customer", party_id=cust["id"], doc_ref=inv["id"]),
                            ledger.Line("rule:revenue", -subtotal, doc_ref=inv["id"]),
                            ledger.Line("rule:sales_tax", -tax, doc_ref=inv["id"])])
    tx.update(ar_invoices, inv["id"], subtotal_cents=subtotal, tax_cents=tax, total_cents=total, je_id=je or None,
              status="paid" if total == 0 else "open")
    tx.touch("shipment", shipment_id)
    tx.set_status("shipment", shipments, shipment_id, "invoiced", f"invoice {inv['id']}", invoice_id=inv["id"])
    open_lines = [l for l in tx.rows(so_lines, so_id=so["id"]) if l["status"] == "open"]
    uninvoiced = [s for s in tx.rows(shipments, so_id=so["id"]) if not s["invoice_id"]]
    if so["status"] == "shipped" and not open_lines and not uninvoiced:
        tx.set_status("sales_order", sales_orders, so["id"], "invoiced", f"invoice {inv['id']}")
    return invoice_view(tx, inv["id"])


def invoice_view(tx: Tx, invoice_id: str) -> dict[str, Any]:
    """An AR invoice with lines, applications, history and links."""
    inv = tx.get(ar_invoices, invoice_id, "AR invoice")
    apps = tx.rows(cash_applications, invoice_id=invoice_id)
    return {"id": inv["id"], "status": inv["status"], "customer_id": inv["customer_id"],
            "invoice_date": inv["invoice_date"], "due_date": inv["due_date"], "terms": inv["terms"],
            "customer_po": inv["customer_po"], "subtotal": from_cents(inv["subtotal_cents"]),
            "tax": from_cents(inv["tax_cents"]), "total": from_cents(inv["total_cents"]),
            "applied": from_cents(inv["applied_cents"]),
            "open": from_cents(inv["total_cents"] - inv["applied_cents"]), "created_by": inv["created_by"],
            "lines": [{"line_no": l["line_no"], "so_line": l["so_line"], "item_id": l["item_id"], "qty": l["qty"],
                       "unit_price": l["unit_price"], "amount": from_cents(l["amount_cents"])}
                      for l in tx.rows(ar_invoice_lines, invoice_id=invoice_id)],
            "applications": [{"receipt_id": a["receipt_id"], "amount": from_cents(a["amount_cents"]),
                              "on_date": a["on_date"]} for a in apps],
            "history": tx.history("ar_invoice", invoice_id),
            "links": {"shipment": inv["shipment_id"], "sales_order": inv["so_id"], "journal_entry": inv["je_id"],
                      "cash_receipts": sorted({a["receipt_id"] for a in apps})}}


def record_receipt(tx: Tx, body: CashReceiptIn) -> dict[str, Any]:
    """Record customer cash (unapplied until applied) and post it."""
    cust = get_customer(tx, body.customer_id)
    cents = to_cents(body.amount)
    rc = tx.create_doc("cash_receipt", cash_receipts, "CR", "unapplied", customer_id=cust["id"],
                       receipt_date=tx.business_date, amount_cents=cents, applied_cents=0, reference=body.reference,
                       method=body.method, note=body.note)
    je = ledger.post(tx, source="cash_receipt", source_ref=rc["id"], memo=f"Cash receipt {rc['id']} ({cust['id']})",
                     lines=[ledger.Line("rule:cash", cents, doc_ref=rc["id"]),
                            ledger.Line("rule:unapplied_cash", -cents, party_type="customer", party_id=cust["id"],
                                        doc_ref=rc["id"])])
    tx.update(cash_receipts, rc["id"], je_id=je or None)
    return receipt_view(tx, rc["id"])


def apply_receipt(tx: Tx, receipt_id: str, body: ApplyIn) -> dict[str, Any]:
    """Apply unapplied cash to open invoices of the customer (or of its subsidiaries)."""
    rc = tx.get(cash_receipts, receipt_id, "cash receipt")
    unapplied = rc["amount_cents"] - rc["applied_cents"]
    if unapplied <= 0:
        raise refused("bad_status", f"Cash receipt {receipt_id} is fully applied.", status=rc["status"])
    seen: set[str] = set()
    plan: list[tuple[dict[str, Any], int]] = []
    for a in body.applications:
        if a.invoice_id in seen:
            raise invalid(f"Invoice {a.invoice_id} appears twice.")
        seen.add(a.invoice_id)
        inv = tx.get(ar_invoices, a.invoice_id, "AR invoice")
        cust = get_customer(tx, inv["customer_id"])
        if inv["customer_id"] != rc["customer_id"] and cust["parent_id"] != rc["customer_id"]:
            raise refused("customer_mismatch", f"Invoice {inv['id']} is {inv['customer_id']}'s; receipt "
                                               f"{receipt_id} is from {rc['customer_id']}.")
        cents = to_cents(a.amount)
        open_cents = inv["total_cents"] - inv["applied_cents"]
        if cents > open_cents:
            raise refused("over_invoice_open", f"Invoice {inv['id']} has {from_cents(open_cents)} open; "
                                               f"{from_cents(cents)} cannot be applied.", open=from_cents(open_cents))
        plan.append((inv, cents))
    total = sum(c for _, c in plan)
    if total > unapplied:
        raise refused("over_unapplied", f"Receipt {receipt_id} has {from_cents(unapplied)} unapplied; "
                                        f"{from_cents(total)} was asked for.", unapplied=from_cents(unapplied))
    tx.touch("cash_receipt", receipt_id)
    lines = [ledger.Line("rule:unapplied_cash", total, party_type="customer", party_id=rc["customer_id"],
                         doc_ref=receipt_id)]
    lines += [ledger.Line("rule:ar", -c, party_type="customer", party_id=inv["customer_id"], doc_ref=inv["id"])
              for inv, c in plan]
    je = ledger.post(tx, source="cash_application", source_ref=receipt_id,
                     memo=f"Apply {receipt_id} to {', '.join(i['id'] for i, _ in plan)}", lines=lines)
    for inv, c in plan:
        tx.touch("ar_invoice", inv["id"])
        tx.insert(cash_applications, receipt_id=receipt_id, invoice_id=inv["id"], amount_cents=c,
                  on_date=tx.business_date, by_user=tx.actor.user_id, je_id=je or None)
        applied = inv["applied_cents"] + c
        tx.update(ar_invoices, inv["id"], applied_cents=applied)
        to = "paid" if applied >= inv["total_cents"] else "partially_paid"
        if to != inv["status"]:
            tx.set_status("ar_invoice", ar_invoices, inv["id"], to, f"cash {receipt_id}")
    applied_rc = rc["applied_cents"] + total
    tx.update(cash_receipts, receipt_id, applied_cents=applied_rc)
    to = "applied" if applied_rc >= rc["amount_cents"] else "partially_applied"
    if to != rc["status"]:
        tx.set_status("cash_receipt", cash_receipts, receipt_id, to, "applied")
    return receipt_view(tx, receipt_id)


def receipt_view(tx: Tx, receipt_id: str) -> dict[str, Any]:
    """A cash receipt with its applications, history and links."""
    rc = tx.get(cash_receipts, receipt_id, "cash receipt")
    apps = tx.rows(cash_applications, receipt_id=receipt_id)
    return {"id": rc["id"], "status": rc["status"], "customer_id": rc["customer_id"],
            "receipt_date": rc["receipt_date"], "amount": from_cents(rc["amount_cents"]),
            "applied": from_cents(rc["applied_cents"]),
            "unapplied": from_cents(rc["amount_cents"] - rc["applied_cents"]), "reference": rc["reference"],
            "method": rc["method"], "note": rc["note"], "created_by": rc["created_by"],
            "applications": [{"invoice_id": a["invoice_id"], "amount": from_cents(a["amount_cents"]),
                              "on_date": a["on_date"], "by_user": a["by_user"]} for a in apps],
            "history": tx.history("cash_receipt", receipt_id),
            "links": {"journal_entry": rc["je_id"], "ar_invoices": [a["invoice_id"] for a in apps]}}
