"""Payables' service: invoice entry as billed, line corrections, validation (the posting),
approval, rejection, voiding, and holds.

Posting at validation (debit positive): an item line on a PO line debits GRNI at billed
quantity × PO price (recorded in `ap_invoice_lines.grni_cents`) and invoice price variance for
the rest of the line; other item/other lines debit the line's account (or the vendor's
default, or 6900); freight → freight-in; tax → purchase tax; the total credits AP with the
vendor as party. Voiding mirrors the validation entry exactly.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

from pydantic import Field
from sqlalchemy import func, select
from sqlalchemy import update as sa_update

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.errors import Problem, invalid, refused
from ...kernel.money import Amount, Quantity, from_cents, q4, to_cents
from ...kernel.tx import Tx
from .. import ledger
from ..ledger import Line, terms
from ..org import approval_limits, company
from ..purchasing.tables import purchase_orders
from ..vendors import vendors
from .match import po_line_facts
from .settlement import settlement
from .tables import HOLD_REASONS, ap_invoice_lines, ap_invoices, holds
from .views import invoice_detail


def active_holds(tx: Tx, invoice_id: str) -> list[dict]:
    """Active holds of an invoice."""
    return tx.rows(holds, invoice_id=invoice_id, status="active")


def setting_cents(tx: Tx, key: str, default: int) -> int:
    """An integer company setting from the `company` table."""
    row = tx.find(company, key=key)
    try:
        return int(row["value"]) if row else default
    except ValueError:
        return default


def _terms_dates(tx: Tx, terms_id: str, invoice_date: str, total: int) -> dict:
    t = tx.find(terms, id=terms_id)
    if t is None:
        raise invalid(f"Payment terms {terms_id} do not exist.")
    d = dt.date.fromisoformat(invoice_date)
    out = {"due_date": (d + dt.timedelta(days=t["net_days"])).isoformat(), "discount_date": None,
           "discount_cents": 0}
    if t["discount_pct"] and t["discount_days"]:
        out["discount_date"] = (d + dt.timedelta(days=t["discount_days"])).isoformat()
        out["discount_cents"] = int((Decimal(total) * Decimal(str(t["discount_pct"])) / 100)
                                    .quantize(Decimal("1"), rounding="ROUND_HALF_UP"))
    return out


class InvoiceLineIn(In):
    """One line as billed."""

    kind: str = Field("item", pattern="^(item|freight|tax|other)$")
    po_line: int | None = Field(None, ge=1, description="Line number on the invoice's PO (item lines).")
    item: str | None = None
    description: str | None = Field(None, max_length=500)
    qty: Quantity | None = None
    unit_price: Amount | None = Field(None, description="Price per unit as billed (up to 2 decimals).")
    amount: Amount | None = Field(None, description="Line amount; defaults to qty × unit_price.")
    account: str | None = Field(None, description="Expense account for lines not on a PO.")


class InvoiceIn(In):
    """A vendor invoice, entered as billed."""

    vendor: str
    invoice_no: str = Field(min_length=1, max_length=60)
    invoice_date: IsoDate
    po: str | None = None
    terms: str | None = Field(None, description="Defaults to the vendor's terms.")
    source_ref: str | None = Field(None, max_length=100)
    memo: str | None = Field(None, max_length=2000)
    lines: list[InvoiceLineIn] = Field(min_length=1, max_length=200)


class LinePatch(In):
    """Corrections to one line while the invoice is entered."""

    kind: str | None = Field(None, pattern="^(item|freight|tax|other)$")
    po_line: int | None = Field(None, ge=1)
    item: str | None = None
    description: str | None = Field(None, max_length=500)
    qty: Quantity | None = None
    unit_price: Amount | None = None
    amount: Amount | None = None
    account: str | None = None


class HoldIn(In):
    reason: str = Field(pattern="^(" + "|".join(HOLD_REASONS) + ")$")
    line_no: int | None = Field(None, ge=1)
    note: str | None = Field(None, max_length=2000)


class NoteIn(In):
    note: str | None = Field(None, max_length=2000)


def _line_values(tx: Tx, ln: InvoiceLineIn | dict) -> dict:
    get = (lambda k: ln.get(k)) if isinstance(ln, dict) else (lambda k: getattr(ln, k))
    qty, price, amount = get("qty"), get("unit_price"), get("amount")
    if amount is None:
        if qty is None or price is None:
            raise invalid("Each line needs an amount, or a qty and a unit_price.")
        amount_cents = to_cents(Decimal(str(qty)) * Decimal(str(price)))
    else:
        amount_cents = to_cents(amount)
    account = get("account")
    if account is not None:
        acct = tx.find(ledger.accounts, id=account)
        if acct is None:
            raise invalid(f"Account {account} does not exist.")
        if acct["control"]:
            raise invalid(f"Account {account} is a control account; invoice lines cannot post to it directly.")
    return {"kind": get("kind") or "item", "po_line": get("po_line"), "item_id": get("item"),
            "description": get("description"), "qty": q4(qty) if qty is not None else None,
            "unit_price": q4(price) if price is not None else None, "amount_cents": amount_cents,
            "account_id": account}


def _refresh_totals(tx: Tx, invoice_id: str) -> None:
    inv = tx.get(ap_invoices, invoice_id)
    total = int(tx.scalar(select(func.coalesce(func.sum(ap_invoice_lines.c.amount_cents), 0))
                          .where(ap_invoice_lines.c.invoice_id == invoice_id)) or 0)
    if total <= 0:
        raise invalid("An invoice total must be positive.")
    tx.update(ap_invoices, invoice_id, total_cents=total, **_terms_dates(tx, inv["terms"], inv["invoice_date"], total))


def enter_invoice(tx: Tx, body: InvoiceIn) -> dict:
    """Enter an invoice as billed (status entered). An exact duplicate vendor + invoice number
    is refused; near-duplicates are the clerk's to catch."""
    v = tx.get(vendors, body.vendor, "vendor")
    dup = tx.one(select(ap_invoices.c.id).where(ap_invoices.c.vendor_id == v["id"],
                                                ap_invoices.c.invoice_no == body.invoice_no,
                                                ap_invoices.c.status.not_in(("rejected", "voided"))))
    if dup:
        raise refused("duplicate_invoice",
                      f"Invoice {body.invoice_no} from {v['id']} is already entered as {dup['id']}.",
                      existing=dup["id"])
    if body.po:
        po = tx.find(purchase_orders, id=body.po)
        if po is None:
            raise invalid(f"Purchase order {body.po} does not exist.")
        if po["vendor_id"] != v["id"]:
            raise invalid(f"Purchase order {body.po} is not from vendor {v['id']}.")
    terms_id = body.terms or v["terms"]
    values = [_line_values(tx, ln) for ln in body.lines]
    total = sum(x["amount_cents"] for x in values)
    if total <= 0:
        raise invalid("An invoice total must be positive.")
    row = tx.create_doc("ap_invoice", ap_invoices, "APINV", "entered", vendor_id=v["id"], invoice_no=body.invoice_no,
                        invoice_date=body.invoice_date.isoformat(), terms=terms_id, total_cents=total,
                        po_id=body.po, source_ref=body.source_ref, memo=body.memo,
                        **_terms_dates(tx, terms_id, body.invoice_date.isoformat(), total))
    for n, x in enumerate(values, start=1):
        tx.insert(ap_invoice_lines, invoice_id=row["id"], line_no=n, **x)
    return invoice_detail(tx, row["id"])


def _editable(inv: dict) -> bool:
    return inv["status"] == "entered" or (inv["status"] == "on_hold" and inv["prior_status"] == "entered")


def update_line(tx: Tx, invoice_id: str, line_no: int, body: LinePatch) -> dict:
    """Correct a line while the invoice is still entered (not yet validated)."""
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if not _editable(inv):
        raise refused("not_editable", f"Invoice {invoice_id} is {inv['status']}; lines change only while entered.")
    ln = tx.find(ap_invoice_lines, invoice_id=invoice_id, line_no=line_no)
    if ln is None:
        raise Problem(404, "not_found", f"Invoice {invoice_id} has no line {line_no}.")
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise invalid("Nothing to change.")
    merged = {"kind": ln["kind"], "po_line": ln["po_line"], "item": ln["item_id"], "description": ln["description"],
              "qty": ln["qty"], "unit_price": ln["unit_price"], "account": ln["account_id"], "amount": None}
    if "amount" not in changes and ({"qty", "unit_price"} & changes.keys()) == set():
        merged["amount"] = Decimal(ln["amount_cents"]) / 100
    merged.update(changes)
    tx.touch("ap_invoice", invoice_id)
    values = _line_values(tx, merged)
    tx.conn.execute(sa_update(ap_invoice_lines).where(ap_invoice_lines.c.invoice_id == invoice_id,
                                                      ap_invoice_lines.c.line_no == line_no).values(**values))
    _refresh_totals(tx, invoice_id)
    return invoice_detail(tx, invoice_id)


def _validation_lines(tx: Tx, inv: dict, lines: list[dict]) -> tuple[list[Line], dict[int, int]]:
    """The validation posting, and the GRNI relieved per PO-matched item line."""
    v = tx.get(vendors, inv["vendor_id"])
    fallback = v["default_account"] or "6900"
    out, grni = [], {}
    party = dict(party_type="vendor", party_id=inv["vendor_id"], doc_ref=inv["id"])
    for ln in lines:
        amt = ln["amount_cents"]
        memo = f"{inv['id']} line {ln['line_no']}"
        if ln["kind"] == "freight":
            out.append(Line(ln["account_id"] or "rule:freight_in", amt, memo, **party))
        elif ln["kind"] == "tax":
            out.append(Line(ln["account_id"] or "rule:purchase_tax", amt, memo, **party))
        elif ln["kind"] == "item" and (facts := po_line_facts(tx, inv["po_id"], ln["po_line"])) is not None:
            # GRNI is relieved at billed quantity x PO price; the price difference is IPV.
            g = to_cents(Decimal(str(ln["qty"] or 0)) * Decimal(str(facts["price"])))
            grni[ln["line_no"]] = g
            out.append(Line("rule:grni", g, memo, **party))
            out.append(Line("rule:ipv", amt - g, memo, **party))
        else:
            out.append(Line(ln["account_id"] or fallback, amt, memo, **party))
    out.append(Line("rule:ap", -inv["total_cents"], f"{inv['id']} {inv['invoice_no']}", **party))
    return out, grni


def validate_invoice(tx: Tx, invoice_id: str) -> dict:
    """Validate an entered invoice: post it (AP credit) and move it to matched."""
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if inv["status"] == "on_hold":
        raise refused("on_hold", f"Invoice {invoice_id} is on hold; release its holds first.")
    if tx.get(vendors, inv["vendor_id"])["status"] != "active":
        raise refused("vendor_inactive", f"Vendor {inv['vendor_id']} is inactive.")
    tx.set_status("ap_invoice", ap_invoices, invoice_id, "matched", "validated", allowed_from=["entered"],
                  validated_by=tx.actor.user_id, validated_on=tx.business_date)
    lines = tx.rows(ap_invoice_lines, invoice_id=invoice_id)
    posting, grni = _validation_lines(tx, inv, lines)
    je = ledger.post(tx, source="ap", source_ref=invoice_id, memo=f"AP invoice {inv['invoice_no']} {inv['vendor_id']}",
                     lines=posting)
    for line_no, g in grni.items():
        tx.conn.execute(sa_update(ap_invoice_lines).where(ap_invoice_lines.c.invoice_id == invoice_id,
                                                          ap_invoice_lines.c.line_no == line_no).values(grni_cents=g))
    tx.update(ap_invoices, invoice_id, journal_entry=je)
    return invoice_detail(tx, invoice_id)


def approve_invoice(tx: Tx, invoice_id: str) -> dict:
    """Approve a matched invoice for payment. Refused while held; the enterer cannot approve
    above the self-approval limit (company setting ap_self_approval_limit_cents, default 0)."""
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if inv["status"] == "on_hold":
        raise refused("on_hold", f"Invoice {invoice_id} is on hold; release its holds first.")
    if inv["status"] != "matched":
        raise refused("bad_status", f"Invoice {invoice_id} is {inv['status']}; only a matched (validated) invoice "
                                    "can be approved.", status=inv["status"])
    if inv["created_by"] == tx.actor.user_id and inv["total_cents"] > setting_cents(tx, "ap_self_approval_limit_cents", 0):
        raise refused("preparer_cannot_approve", f"You entered invoice {invoice_id}; someone else must approve it.")
    lim = tx.find(approval_limits, user_id=tx.actor.user_id, doc_type="ap_invoice")
    if lim is not None and inv["total_cents"] > lim["limit_cents"]:
        raise refused("over_limit", f"Invoice {invoice_id} ({from_cents(inv['total_cents']):.2f}) is above your "
                                    f"approval limit of {from_cents(lim['limit_cents']):.2f}.")
    tx.set_status("ap_invoice", ap_invoices, invoice_id, "approved", "approved for payment", allowed_from=["matched"],
                  approved_by=tx.actor.user_id, approved_on=tx.business_date)
    return invoice_detail(tx, invoice_id)


def reject_invoice(tx: Tx, invoice_id: str, body: NoteIn | None) -> dict:
    """Reject an invoice that has not been validated (validated ones are voided instead)."""
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if not _editable(inv):
        raise refused("bad_status", f"Invoice {invoice_id} is {inv['status']}; only an entered invoice can be "
                                    "rejected (void a validated one).", status=inv["status"])
    tx.set_status("ap_invoice", ap_invoices, invoice_id, "rejected", (body.note if body else None) or "rejected")
    return invoice_detail(tx, invoice_id)


def void_invoice(tx: Tx, invoice_id: str, body: NoteIn | None) -> dict:
    """Void an invoice; a validated one is reversed in the ledger. Refused once any payment
    (proposed or made) exists for it."""
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if inv["status"] == "paid" or settlement().settled_cents(tx, invoice_id, None):
        raise refused("has_payments", f"Invoice {invoice_id} has payments; it cannot be voided.")
    pay = settlement().live_payment(tx, invoice_id)
    if pay:
        raise refused("has_payments", f"Invoice {invoice_id} is proposed in payment run {pay['run_id']}; remove it first.")
    if inv["status"] not in ("entered", "matched", "approved", "on_hold"):
        raise refused("bad_status", f"Invoice {invoice_id} is {inv['status']}; it cannot be voided.", status=inv["status"])
    tx.set_status("ap_invoice", ap_invoices, invoice_id, "voided", (body.note if body else None) or "voided",
                  voided_on=tx.business_date if inv["validated_on"] else None)
    for h in active_holds(tx, invoice_id):
        tx.conn.execute(holds.update().where(holds.c.id == h["id"]).values(
            status="released", released_by=tx.actor.user_id, released_on=tx.business_date, release_note="invoice voided"))
    if inv["validated_on"]:
        # The exact mirror of the validation entry, so PO prices changed since do not matter.
        ledger.post(tx, source="ap", source_ref=invoice_id, memo=f"Void AP invoice {inv['invoice_no']}",
                    lines=_void_lines_from_entry(tx, inv))
    return invoice_detail(tx, invoice_id)


def _void_lines_from_entry(tx: Tx, inv: dict) -> list[Line]:
    """The mirror of the invoice's validation entry."""
    out = []
    for jl in tx.rows(ledger.journal_lines, entry_id=inv["journal_entry"]):
        out.append(Line(jl["account_id"], jl["credit_cents"] - jl["debit_cents"], f"void {jl['memo'] or ''}".strip(),
                        jl["party_type"], jl["party_id"], jl["doc_ref"]))
    return out


def place_hold(tx: Tx, invoice_id: str, body: HoldIn) -> dict:
    """Put an invoice on hold with a reason code (optionally naming a line)."""
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if inv["status"] not in ("entered", "matched", "approved", "on_hold"):
        raise refused("bad_status", f"Invoice {invoice_id} is {inv['status']}; it cannot be held.", status=inv["status"])
    if body.line_no is not None and tx.find(ap_invoice_lines, invoice_id=invoice_id, line_no=body.line_no) is None:
        raise invalid(f"Invoice {invoice_id} has no line {body.line_no}.")
    tx.touch("ap_invoice", invoice_id)
    hold_id = tx.next_id("HOLD")
    tx.insert(holds, id=hold_id, invoice_id=invoice_id, line_no=body.line_no, reason=body.reason, note=body.note,
              status="active", placed_by=tx.actor.user_id, placed_on=tx.business_date)
    if inv["status"] != "on_hold":
        tx.set_status("ap_invoice", ap_invoices, invoice_id, "on_hold", f"hold {hold_id}: {body.reason}",
                      prior_status=inv["status"])
    return invoice_detail(tx, invoice_id)


def release_hold(tx: Tx, hold_id: str, body: NoteIn | None) -> dict:
    """Release one hold; when it was the invoice's last, the invoice returns to its prior status."""
    h = tx.get(holds, hold_id, "hold")
    if h["status"] != "active":
        raise refused("bad_status", f"Hold {hold_id} is already {h['status']}.", status=h["status"])
    tx.touch("ap_invoice", h["invoice_id"])
    tx.conn.execute(holds.update().where(holds.c.id == hold_id).values(
        status="released", released_by=tx.actor.user_id, released_on=tx.business_date,
        release_note=body.note if body else None))
    inv = tx.get(ap_invoices, h["invoice_id"])
    if inv["status"] == "on_hold" and not active_holds(tx, inv["id"]):
        tx.set_status("ap_invoice", ap_invoices, inv["id"], inv["prior_status"] or "entered",
                      f"hold {hold_id} released", prior_status=None)
    return invoice_detail(tx, h["invoice_id"])
