"""Receivables: customer invoices from shipments, cash receipts (unapplied cash until applied),
applications, the customer actor that pays by profile, the AR and unapplied-cash subledgers and
the ar-aging report.

Postings: invoice Dr AR / Cr revenue, Cr sales tax; receipt Dr cash / Cr unapplied cash;
application Dr unapplied cash / Cr AR. The ``ar`` subledger is the open balance of invoices, the
``unapplied_cash`` subledger the unapplied part of receipts (a credit), so both control
accounts tie after any sequence of accepted requests.

World file (read by the customer actor, never free text the agent wrote)::

    "customer_default": {...profile...},          # optional: for customers without a profile
    "customers": {"C-0101": {"pays": "on_time" | "late" | "short" | "never",
                             "days_late": 15, "short_pct": 5.0, "short_reason": "damaged case",
                             "reference": "invoice" | "po" | "wrong" | "<literal text>",
                             "payer": "C-0100",     # a parent paying for this subsidiary
                             "orders": [{"on": "2026-10-12", "customer_po": "PO-77",
                                         "lines": [{"item_id": "FV-100", "qty": 20}]}]}}

Each invoice is paid once, on its due date (plus ``days_late``): the bank records an unapplied
receipt (user sys-bank, action ``ar.remit``) and a remittance advice lands in the ``ar`` box.
Scheduled orders arrive as emails with a PDF purchase order in the ``sales`` box.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from sqlalchemy import Column, Float, Integer, String, Table, Text, func, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..kernel.clock import add_days
from ..kernel.errors import invalid, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Amount, from_cents, q4, to_cents
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from ..sim import SectionModel, WorldDate, actor, sim_log, world_section
from . import ledger
from .sales import amount_cents, customers, get_customer, sales_orders, shipment_lines, shipments, so_lines

ar_invoices = Table(
    "ar_invoices", metadata,
    *doc_columns(),                                       # open | partially_paid | paid
    Column("customer_id", String, nullable=False, index=True),
    Column("shipment_id", String, index=True),
    Column("so_id", String),
    Column("customer_po", String),
    Column("invoice_date", String, nullable=False),
    Column("due_date", String, nullable=False),
    Column("terms", String, nullable=False),
    Column("subtotal_cents", Integer, nullable=False),
    Column("tax_cents", Integer, nullable=False),
    Column("total_cents", Integer, nullable=False),
    Column("applied_cents", Integer, nullable=False, default=0),
    Column("je_id", String),
)

ar_invoice_lines = Table(
    "ar_invoice_lines", metadata,
    Column("invoice_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("so_line", Integer),
    Column("item_id", String),
    Column("description", Text),
    Column("qty", Float, nullable=False),
    Column("unit_price", Float, nullable=False),
    Column("amount_cents", Integer, nullable=False),
    Column("cost_cents", Integer, nullable=False, default=0),
)

cash_receipts = Table(
    "cash_receipts", metadata,
    *doc_columns(),                                       # unapplied | partially_applied | applied
    Column("customer_id", String, nullable=False, index=True),
    Column("receipt_date", String, nullable=False),
    Column("amount_cents", Integer, nullable=False),
    Column("applied_cents", Integer, nullable=False, default=0),
    Column("reference", String),
    Column("method", String, nullable=False),            # check | ach | wire
    Column("note", Text),
    Column("je_id", String),
)

cash_applications = Table(
    "cash_applications", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("receipt_id", String, nullable=False, index=True),
    Column("invoice_id", String, nullable=False, index=True),
    Column("amount_cents", Integer, nullable=False),
    Column("on_date", String, nullable=False),
    Column("by_user", String, nullable=False),
    Column("je_id", String),
)

register_object("ar_invoice", ar_invoices, [(ar_invoice_lines, "invoice_id")])
register_object("cash_receipt", cash_receipts, [(cash_applications, "receipt_id")])


# Subledgers -------------------------------------------------------------------------------------

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


# Invoices ------------------------------------------------------------------------------------------

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


# Cash ------------------------------------------------------------------------------------------------

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


# AR aging --------------------------------------------------------------------------------------------

BUCKETS = (("current", None, 0), ("1_30", 1, 30), ("31_60", 31, 60), ("61_90", 61, 90), ("over_90", 91, None))


def ar_aging(tx: Tx, params: Any) -> dict:
    """Open invoices as of a date by days past due, per customer, with unapplied cash."""
    from .reports import as_of_of
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


def _register_reports() -> None:
    from .reports import AsOfParams, register_report

    class ArAgingParams(AsOfParams):
        customer_id: str | None = None

    register_report("ar-aging", ar_aging, ArAgingParams, title="Receivables aging by days past due")


_register_reports()


# The customer actor -------------------------------------------------------------------------------------

class OrderLine(SectionModel):
    """One line of a customer's scheduled order."""

    item_id: str
    qty: float


class CustomerOrder(SectionModel):
    """A purchase order the customer emails (with a PDF) on the first workday on or after `on`."""

    on: WorldDate
    customer_po: str | None = None
    box: str = "sales"
    lines: list[OrderLine] = []


class CustomerProfile(SectionModel):
    """How a customer pays (and what it orders); see the module docstring."""

    pays: Literal["on_time", "late", "short", "never"] = "on_time"
    days_late: int = 15
    short_pct: float = 5.0
    short_reason: str | None = None
    reference: str = "invoice"          # invoice | po | wrong | literal text
    payer: str | None = None
    orders: list[CustomerOrder] = []


world_section("customers", dict[str, CustomerProfile], owner=__name__, doc="customer profiles by customer id")
world_section("customer_default", CustomerProfile, owner=__name__, doc="the profile of customers without one")


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
def _customers(day) -> None:
    """Customers pay open invoices by profile and send scheduled orders (see module docstring)."""
    from .comms import deliver, make_pdf
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
            cust = day.look(lambda tx, cid=cid: tx.find(customers, id=cid))
            if cust is None:
                raise RuntimeError(f"world names unknown customer {cid!r}")
            po = order.get("customer_po", f"{cid}-PO-{i + 1}")
            lines = [f"{l['qty']} x {l['item_id']}" for l in order.get("lines", [])]
            pdf = make_pdf(f"PURCHASE ORDER {po}", [cust["name"], f"Date: {day.date}", ""] + lines)
            day.act("sys-mail", "msg.deliver", "/sim/customer-orders", {"customer": cid, "po": po},
                    lambda tx, cust=cust, po=po, lines=lines, pdf=pdf, order=order: deliver(
                        tx, order.get("box", "sales"), cust["email"] or f"{cust['id']}@customer.example",
                        f"Purchase order {po}", "Please ship the following:\n" + "\n".join(lines),
                        [(f"{po}.pdf", pdf)]))
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
                lambda tx, body=body: record_receipt(tx, CashReceiptIn(**body)))
        payer_row = day.look(lambda tx, payer=payer: tx.find(customers, id=payer)) or {}
        text = f"We have sent {from_cents(cents):.2f} by ACH, reference {ref}."
        if prof.get("pays") == "short":
            text += f" Short paid: {prof.get('short_reason', 'see attached')}."
        day.act("sys-mail", "msg.deliver", "/sim/remittance", {"invoice": inv["id"]},
                lambda tx, text=text, payer_row=payer_row, ref=ref: deliver(
                    tx, "ar", payer_row.get("email") or f"{payer}@customer.example", f"Remittance advice {ref}",
                    text))
        day.log(f"customer:{inv['customer_id']}", "customer_payment", inv["id"],
                {"payer": payer, "amount_cents": cents, "reference": ref})


# Router -------------------------------------------------------------------------------------------------

class ArLineOut(BaseModel):
    line_no: int
    so_line: int | None = None
    item_id: str | None = None
    qty: float
    unit_price: float
    amount: float


class ArInvoiceOut(BaseModel):
    id: str
    status: str
    customer_id: str
    invoice_date: str
    due_date: str
    terms: str
    customer_po: str | None = None
    subtotal: float
    tax: float
    total: float
    applied: float
    open: float
    created_by: str | None = None
    lines: list[ArLineOut]
    applications: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, Any]


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


class CashReceiptOut(BaseModel):
    id: str
    status: str
    customer_id: str
    receipt_date: str
    amount: float
    applied: float
    unapplied: float
    reference: str | None = None
    method: str
    note: str | None = None
    created_by: str | None = None
    applications: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, Any]


router = APIRouter(tags=["receivables"])


@router.post("/shipments/{shipment_id}/invoice", operation_id="ar.invoice", status_code=201,
             response_model=Envelope[ArInvoiceOut], summary="Invoice a shipment (posts AR, revenue and tax)")
def post_invoice(shipment_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: invoice_shipment(tx, shipment_id))


@router.get("/ar-invoices", response_model=Envelope[Page[ArInvoiceOut]], summary="List customer invoices")
def list_invoices(status: str | None = None, customer_id: str | None = None, so_id: str | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(ar_invoices).order_by(ar_invoices.c.id), page,
                                        render=lambda r: invoice_view(tx, r["id"]), status=status,
                                        customer_id=customer_id, so_id=so_id))


@router.get("/ar-invoices/{invoice_id}", response_model=Envelope[ArInvoiceOut],
            summary="One customer invoice with lines, applications, history and links")
def get_invoice(invoice_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: invoice_view(tx, invoice_id), object_type="ar_invoice", object_id=invoice_id)


@router.get("/cash-receipts", response_model=Envelope[Page[CashReceiptOut]], summary="List cash receipts")
def list_receipts(status: str | None = None, customer_id: str | None = None, reference: str | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(cash_receipts).order_by(cash_receipts.c.id), page,
                                        render=lambda r: receipt_view(tx, r["id"]), status=status,
                                        customer_id=customer_id, reference=reference))


@router.get("/cash-receipts/{receipt_id}", response_model=Envelope[CashReceiptOut], summary="One cash receipt")
def get_receipt(receipt_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: receipt_view(tx, receipt_id), object_type="cash_receipt", object_id=receipt_id)


@router.post("/cash-receipts", operation_id="ar.cash", status_code=201, response_model=Envelope[CashReceiptOut],
             summary="Record customer cash (unapplied until applied)")
def post_receipt(body: CashReceiptIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: record_receipt(tx, body))


@router.post("/cash-receipts/{receipt_id}/apply", operation_id="ar.apply", status_code=201,
             response_model=Envelope[CashReceiptOut], summary="Apply unapplied cash to open invoices")
def post_apply(receipt_id: str, body: ApplyIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: apply_receipt(tx, receipt_id, body), object_type="cash_receipt",
                     object_id=receipt_id)
