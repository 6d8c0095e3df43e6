"""Payables: vendor invoices as billed, holds, three-way match, validation (posting) and approval.

Lifecycle: entered → matched (validated: posted to the ledger) → approved → paid; entered →
rejected; entered/matched/approved → voided (validated ones are reversed; refused once any
payment exists). Placing a hold moves the invoice to ``on_hold`` and remembers where it was;
releasing its last active hold moves it back. The system never places holds by itself.

Posting at validation (debit positive): an item line on a PO line debits GRNI at billed
quantity × PO price (recorded in `ap_invoice_lines.grni_cents`) and invoice price variance for
the rest of the line; other item/other lines debit the line's account (or the vendor's
default, or 6900); freight → freight-in; tax → purchase tax; the total credits AP with the
vendor as party. Voiding mirrors the validation entry exactly. `grni_cleared_cents` is what
receiving's GRNI subledger subtracts (validated, not voided, as of a date), and
`invoiced_qty` what it checks before reversing a receipt.

The ``ap`` subledger (open validated invoices minus payments released and discounts taken) is
registered here, and so is the ap-aging report.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from sqlalchemy import Column, Float, Integer, String, Table, Text, and_, func, or_, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..kernel.errors import Problem, invalid, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Amount, Quantity, from_cents, q4, to_cents
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from . import ledger
from .ledger import Line, terms
from .org import approval_limits, company
from .reports import AsOfParams, as_of_of, register_report
from .vendors import vendors

ap_invoices = Table(
    "ap_invoices", metadata,
    *doc_columns(),                   # entered|matched|on_hold|approved|paid|rejected|voided
    Column("vendor_id", String, nullable=False, index=True),
    Column("invoice_no", String, nullable=False),        # as billed
    Column("invoice_date", String, nullable=False),
    Column("terms", String, nullable=False),
    Column("due_date", String, nullable=False),
    Column("discount_date", String),
    Column("discount_cents", Integer, nullable=False, default=0),
    Column("total_cents", Integer, nullable=False, default=0),
    Column("po_id", String),
    Column("source_ref", String),                        # e.g. the inbox message it came from
    Column("memo", Text),
    Column("prior_status", String),                      # status to return to when the last hold is released
    Column("validated_by", String),
    Column("validated_on", String),
    Column("approved_by", String),
    Column("approved_on", String),
    Column("voided_on", String),
    Column("journal_entry", String),
)

ap_invoice_lines = Table(
    "ap_invoice_lines", metadata,
    Column("invoice_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("kind", String, nullable=False),              # item | freight | tax | other
    Column("po_line", Integer),                          # line number on the invoice's PO
    Column("item_id", String),
    Column("description", Text),
    Column("qty", Float),
    Column("unit_price", Float),
    Column("amount_cents", Integer, nullable=False),
    Column("account_id", String),
    Column("grni_cents", Integer),                       # set at validation for PO-matched item lines
)

holds = Table(
    "holds", metadata,
    Column("id", String, primary_key=True),              # HOLD-10001
    Column("invoice_id", String, nullable=False, index=True),
    Column("line_no", Integer),
    Column("reason", String, nullable=False),
    Column("note", Text),
    Column("status", String, nullable=False),            # active | released
    Column("placed_by", String),
    Column("placed_on", String, nullable=False),
    Column("released_by", String),
    Column("released_on", String),
    Column("release_note", Text),
)

register_object("ap_invoice", ap_invoices, [(ap_invoice_lines, "invoice_id"), (holds, "invoice_id")])

HOLD_REASONS = ("price", "quantity", "no_receipt", "duplicate_suspect", "vendor", "tax", "freight", "dispute", "other")
LINE_KINDS = ("item", "freight", "tax", "other")
POSTED_STATUSES = ("matched", "approved", "paid")     # plus on_hold with a posted prior status
PRICE_TOLERANCE = 0.005


# PO and receipt facts (owned by purchasing/receiving; read only when those tables exist) --------

def _col(table: Table, *names: str):
    for n in names:
        if n in table.c:
            return table.c[n]
    return None


def po_line_facts(tx: Tx, po_id: str | None, line_no: int | None) -> dict | None:
    """Ordered qty, PO unit price, item and received qty of one PO line, or None when the
    purchasing tables are absent or the line does not exist."""
    if not po_id or line_no is None:
        return None
    pol = metadata.tables.get("po_lines")
    if pol is None:
        return None
    c_po, c_line = _col(pol, "po_id"), _col(pol, "line_no", "line")
    if c_po is None or c_line is None:
        return None
    row = tx.one(select(pol).where(c_po == po_id, c_line == line_no))
    if row is None:
        return None
    if "unit_price_cents" in row:
        price = (row["unit_price_cents"] or 0) / 100
    else:
        price = float(row.get("unit_price") or row.get("price") or 0)
    ordered = float(row.get("qty_ordered") or row.get("qty") or 0)
    return {"item": row.get("item_id"), "ordered": ordered, "price": price,
            "received": received_qty(tx, po_id, line_no)}


def received_qty(tx: Tx, po_id: str, line_no: int) -> float | None:
    """Net quantity received on a PO line (posted receipts), or None without receiving tables."""
    rl, rc = metadata.tables.get("receipt_lines"), metadata.tables.get("receipts")
    if rl is None or rc is None:
        return None
    c_rid = _col(rl, "receipt_id")
    c_line = _col(rl, "po_line", "po_line_no", "line_no")
    c_qty = _col(rl, "qty_received", "qty_accepted", "qty")
    c_po = _col(rc, "po_id")
    if c_rid is None or c_line is None or c_qty is None or c_po is None:
        return None
    stmt = (select(func.coalesce(func.sum(c_qty), 0)).select_from(rl.join(rc, rc.c.id == c_rid))
            .where(c_po == po_id, c_line == line_no, rc.c.status != "reversed"))
    if "po_id" in rl.c:
        stmt = stmt.where(rl.c.po_id == po_id)
    return float(tx.scalar(stmt) or 0)


def invoiced_qty(tx: Tx, po_id: str, line_no: int, exclude: str | None = None) -> float:
    """Quantity already billed on a PO line by validated, not voided invoices."""
    stmt = (select(func.coalesce(func.sum(ap_invoice_lines.c.qty), 0))
            .select_from(ap_invoice_lines.join(ap_invoices, ap_invoices.c.id == ap_invoice_lines.c.invoice_id))
            .where(ap_invoices.c.po_id == po_id, ap_invoice_lines.c.po_line == line_no,
                   ap_invoice_lines.c.kind == "item", ap_invoices.c.validated_on.is_not(None),
                   ap_invoices.c.voided_on.is_(None)))
    if exclude:
        stmt = stmt.where(ap_invoices.c.id != exclude)
    return float(tx.scalar(stmt) or 0)


def three_way_match(tx: Tx, inv: dict, lines: list[dict]) -> dict:
    """Each item line against its PO line (price) and receipts (quantity). Informational: the
    system never holds an invoice by itself; the clerk decides."""
    out, worst = [], "matched"
    order = ["matched", "no_po", "price_variance", "quantity_variance", "no_receipt"]
    for ln in lines:
        if ln["kind"] != "item":
            continue
        facts = po_line_facts(tx, inv["po_id"], ln["po_line"])
        if facts is None:
            res = {"line_no": ln["line_no"], "result": "no_po"}
        else:
            billed_qty, billed_price = ln["qty"] or 0.0, ln["unit_price"] or 0.0
            prior = invoiced_qty(tx, inv["po_id"], ln["po_line"], exclude=inv["id"])
            received = facts["received"]
            result = "matched"
            if received is not None and received <= 0:
                result = "no_receipt"
            elif received is not None and billed_qty > received - prior + 1e-9:
                result = "quantity_variance"
            elif abs(billed_price - facts["price"]) > PRICE_TOLERANCE:
                result = "price_variance"
            res = {"line_no": ln["line_no"], "po_line": ln["po_line"], "result": result,
                   "po_price": facts["price"], "billed_price": billed_price, "ordered": facts["ordered"],
                   "received": received, "previously_invoiced": prior, "billed_qty": billed_qty}
        out.append(res)
        if order.index(res["result"]) > order.index(worst):
            worst = res["result"]
    return {"result": worst if out else "no_item_lines", "lines": out}


# Amounts ----------------------------------------------------------------------------------------

def settled_cents(tx_or_conn, invoice_id: str, as_of: str | None = None, *, live_only: bool = False) -> int:
    """Cash plus discount applied to an invoice by released (or cleared) payments; with
    live_only=False proposals are excluded too (they are not settled yet)."""
    from .payments import payment_allocations, payments
    conn = getattr(tx_or_conn, "conn", tx_or_conn)
    stmt = (select(func.coalesce(func.sum(payment_allocations.c.amount_cents + payment_allocations.c.discount_cents), 0))
            .select_from(payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id))
            .where(payment_allocations.c.invoice_id == invoice_id,
                   payments.c.status.in_(("released", "cleared"))))
    if as_of:
        stmt = stmt.where(payments.c.released_on <= as_of)
    return int(conn.execute(stmt).scalar() or 0)


def settled_cents_by_invoice(tx_or_conn, invoice_ids: list[str]) -> dict[str, int]:
    """`settled_cents` (no as_of) of many invoices in one grouped query; invoices with nothing
    settled are absent (read them as 0). For list pages, where one query per row dominates."""
    from .payments import payment_allocations, payments
    if not invoice_ids:
        return {}
    conn = getattr(tx_or_conn, "conn", tx_or_conn)
    stmt = (select(payment_allocations.c.invoice_id,
                   func.sum(payment_allocations.c.amount_cents + payment_allocations.c.discount_cents))
            .select_from(payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id))
            .where(payment_allocations.c.invoice_id.in_(invoice_ids),
                   payments.c.status.in_(("released", "cleared")))
            .group_by(payment_allocations.c.invoice_id))
    return {inv_id: int(total or 0) for inv_id, total in conn.execute(stmt)}


def _open_from(inv: dict, settled: int) -> int:
    # The one rule behind open_cents, shared by the single and the batched path.
    if inv["status"] in ("rejected", "voided"):
        return 0
    return inv["total_cents"] - settled


def open_cents(tx: Tx, inv: dict) -> int:
    """What is still owed on an invoice (0 for rejected and voided ones)."""
    if inv["status"] in ("rejected", "voided"):
        return 0
    return _open_from(inv, settled_cents(tx, inv["id"]))


_DISPUTE_REF_COLUMNS = ("ap_invoice_id", "invoice_id", "record_id", "ref", "ap_invoice", "doc_ref")
_DISPUTE_CLOSED = ("closed", "resolved", "cancelled", "withdrawn", "answered", "rejected", "credited", "refused",
                   "done")


def _dispute_is_open(row: dict) -> bool:
    return (row.get("status") or "open") not in _DISPUTE_CLOSED


def is_disputed(tx: Tx, invoice_id: str) -> bool:
    """True when the invoice has an active dispute hold or an open dispute vendor request."""
    if tx.one(select(holds.c.id).where(holds.c.invoice_id == invoice_id, holds.c.reason == "dispute",
                                       holds.c.status == "active")):
        return True
    vr = metadata.tables.get("vendor_requests")
    if vr is None or "kind" not in vr.c:
        return False
    conds = [vr.c[n] == invoice_id for n in _DISPUTE_REF_COLUMNS if n in vr.c]
    if "invoice_no" in vr.c and "vendor_id" in vr.c:
        # A dispute may name the vendor's invoice number instead of our id.
        inv = tx.find(ap_invoices, id=invoice_id)
        if inv is not None:
            conds.append(and_(vr.c.vendor_id == inv["vendor_id"], vr.c.invoice_no == inv["invoice_no"]))
    if not conds:
        return False
    stmt = select(vr).where(vr.c.kind == "dispute", or_(*conds))
    return any(_dispute_is_open(row) for row in tx.all(stmt))


def disputed_invoice_ids(tx: Tx, invoices: list[dict]) -> set[str]:
    """The ids among `invoices` (ap_invoices rows) that `is_disputed` would call disputed, in two
    queries whatever the count: active dispute holds, then dispute vendor requests naming one of
    the ids or one of the (vendor, invoice number) pairs, matched back to invoices in Python."""
    ids = [inv["id"] for inv in invoices]
    if not ids:
        return set()
    out = {r[0] for r in tx.conn.execute(
        select(holds.c.invoice_id).where(holds.c.invoice_id.in_(ids), holds.c.reason == "dispute",
                                         holds.c.status == "active"))}
    vr = metadata.tables.get("vendor_requests")
    if vr is None or "kind" not in vr.c:
        return out
    ref_cols = [n for n in _DISPUTE_REF_COLUMNS if n in vr.c]
    conds = [vr.c[n].in_(ids) for n in ref_cols]
    by_pair: dict[tuple[str, str], list[str]] = {}
    if "invoice_no" in vr.c and "vendor_id" in vr.c:
        for inv in invoices:
            by_pair.setdefault((inv["vendor_id"], inv["invoice_no"]), []).append(inv["id"])
        # A superset (vendor in page AND number in page); exact pairs are checked below.
        conds.append(and_(vr.c.vendor_id.in_(sorted({v for v, _ in by_pair})),
                          vr.c.invoice_no.in_(sorted({n for _, n in by_pair}))))
    if not conds:
        return out
    wanted = set(ids)
    for row in tx.all(select(vr).where(vr.c.kind == "dispute", or_(*conds))):
        if not _dispute_is_open(row):
            continue
        out.update(row[n] for n in ref_cols if row[n] in wanted)
        if by_pair:
            out.update(by_pair.get((row["vendor_id"], row["invoice_no"]), ()))
    return out


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


# Views ------------------------------------------------------------------------------------------

def line_out(ln: dict) -> dict:
    return {"line_no": ln["line_no"], "kind": ln["kind"], "po_line": ln["po_line"], "item": ln["item_id"],
            "description": ln["description"], "qty": ln["qty"], "unit_price": ln["unit_price"],
            "amount": from_cents(ln["amount_cents"]), "account": ln["account_id"]}


def hold_out(h: dict) -> dict:
    return {"id": h["id"], "invoice": h["invoice_id"], "line_no": h["line_no"], "reason": h["reason"],
            "note": h["note"], "status": h["status"], "placed_by": h["placed_by"], "placed_on": h["placed_on"],
            "released_by": h["released_by"], "released_on": h["released_on"], "release_note": h["release_note"]}


def invoice_out(tx: Tx, inv: dict) -> dict:
    """The list view of an invoice."""
    return _invoice_view(inv, open_cents(tx, inv), is_disputed(tx, inv["id"]))


def invoice_outs(tx: Tx, invs: list[dict]) -> list[dict]:
    """`invoice_out` of a whole page: settled amounts and dispute flags in a few set-based
    queries instead of about four per row."""
    settled = settled_cents_by_invoice(tx, [inv["id"] for inv in invs])
    disputed = disputed_invoice_ids(tx, invs)
    return [_invoice_view(inv, _open_from(inv, settled.get(inv["id"], 0)), inv["id"] in disputed) for inv in invs]


def _invoice_view(inv: dict, open_amount: int, disputed: bool) -> dict:
    return {"id": inv["id"], "status": inv["status"], "vendor": inv["vendor_id"], "invoice_no": inv["invoice_no"],
            "invoice_date": inv["invoice_date"], "terms": inv["terms"], "due_date": inv["due_date"],
            "discount_date": inv["discount_date"], "discount": from_cents(inv["discount_cents"]),
            "total": from_cents(inv["total_cents"]), "open": from_cents(open_amount),
            "po": inv["po_id"], "source_ref": inv["source_ref"], "memo": inv["memo"],
            "on_hold": inv["status"] == "on_hold", "disputed": disputed,
            "entered_by": inv["created_by"], "entered_on": inv["created_on"],
            "validated_on": inv["validated_on"], "approved_by": inv["approved_by"]}


def invoice_detail(tx: Tx, invoice_id: str) -> dict:
    """An invoice with lines, holds, match, open amount, payments, history and links."""
    from .payments import payment_allocations, payments
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    lines = tx.rows(ap_invoice_lines, invoice_id=invoice_id)
    out = invoice_out(tx, inv)
    pays = tx.all(select(payments.c.id, payments.c.run_id, payments.c.status, payments.c.released_on,
                         payments.c.cleared_on, payment_allocations.c.amount_cents, payment_allocations.c.discount_cents)
                  .select_from(payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id))
                  .where(payment_allocations.c.invoice_id == invoice_id).order_by(payments.c.id))
    out.update({
        "lines": [line_out(l) for l in lines],
        "holds": [hold_out(h) for h in tx.rows(holds, invoice_id=invoice_id)],
        "match": three_way_match(tx, inv, lines),
        "payments": [{"payment": p["id"], "run": p["run_id"], "status": p["status"],
                      "amount": from_cents(p["amount_cents"]), "discount": from_cents(p["discount_cents"]),
                      "released_on": p["released_on"], "cleared_on": p["cleared_on"]} for p in pays],
        "history": tx.history("ap_invoice", invoice_id),
        "links": {"vendor": [inv["vendor_id"]], "purchase_order": [inv["po_id"]] if inv["po_id"] else [],
                  "journal_entry": [e["id"] for e in tx.rows(ledger.journal_entries, source_ref=invoice_id)],
                  "payment_run": sorted({p["run_id"] for p in pays})},
    })
    return out


# Request models ---------------------------------------------------------------------------------

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
    invoice_date: dt.date
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


# Service functions --------------------------------------------------------------------------------

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
    if account is not None and tx.find(ledger.accounts, id=account) is None:
        raise invalid(f"Account {account} does not exist.")
    if account is not None:
        acct = tx.find(ledger.accounts, id=account)
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
        pos = metadata.tables.get("purchase_orders")
        if pos is not None:
            po = tx.find(pos, id=body.po)
            if po is None:
                raise invalid(f"Purchase order {body.po} does not exist.")
            if "vendor_id" in po and po["vendor_id"] != v["id"]:
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
    from sqlalchemy import update as sa_update
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
    from sqlalchemy import update as sa_update
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


def _live_proposal(tx: Tx, invoice_id: str) -> dict | None:
    from .payments import payment_allocations, payments
    return tx.one(select(payments.c.id, payments.c.run_id, payments.c.status)
                  .select_from(payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id))
                  .where(payment_allocations.c.invoice_id == invoice_id,
                         payments.c.status.in_(("proposed", "released", "cleared"))))


def void_invoice(tx: Tx, invoice_id: str, body: NoteIn | None) -> dict:
    """Void an invoice; a validated one is reversed in the ledger. Refused once any payment
    (proposed or made) exists for it."""
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if inv["status"] == "paid" or settled_cents(tx, invoice_id):
        raise refused("has_payments", f"Invoice {invoice_id} has payments; it cannot be voided.")
    pay = _live_proposal(tx, invoice_id)
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


# Subledger, GRNI clearing, aging ------------------------------------------------------------------

def _validated_as_of(as_of: str | None):
    cond = [ap_invoices.c.validated_on.is_not(None)]
    if as_of:
        cond += [ap_invoices.c.validated_on <= as_of,
                 or_(ap_invoices.c.voided_on.is_(None), ap_invoices.c.voided_on > as_of)]
    else:
        cond.append(ap_invoices.c.voided_on.is_(None))
    return and_(*cond)


def ap_subledger(conn, as_of: str | None) -> int:
    """Open AP (debit positive, so a credit balance is negative): validated invoices not voided
    by `as_of`, less cash and discounts of payments released by `as_of`."""
    from .payments import payment_allocations, payments
    billed = int(conn.execute(select(func.coalesce(func.sum(ap_invoices.c.total_cents), 0))
                              .where(_validated_as_of(as_of))).scalar() or 0)
    stmt = (select(func.coalesce(func.sum(payment_allocations.c.amount_cents + payment_allocations.c.discount_cents), 0))
            .select_from(payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id))
            .where(payments.c.status.in_(("released", "cleared"))))
    if as_of:
        stmt = stmt.where(payments.c.released_on <= as_of)
    paid = int(conn.execute(stmt).scalar() or 0)
    return -(billed - paid)


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

AGING_BUCKETS = (("current", None, 0), ("1-30", 1, 30), ("31-60", 31, 60), ("61-90", 61, 90), ("90+", 91, None))


class AgingParams(AsOfParams):
    vendor: str | None = None


def ap_aging_report(tx: Tx, params: AgingParams) -> dict:
    """Open validated invoices as of a date, bucketed by days past due."""
    as_of = as_of_of(tx, params)
    stmt = select(ap_invoices).where(_validated_as_of(as_of)).order_by(ap_invoices.c.vendor_id, ap_invoices.c.id)
    if params.vendor:
        stmt = stmt.where(ap_invoices.c.vendor_id == params.vendor)
    rows, totals, by_vendor = [], {b[0]: 0 for b in AGING_BUCKETS}, {}
    day = dt.date.fromisoformat(as_of)
    for inv in tx.all(stmt):
        open_amt = inv["total_cents"] - settled_cents(tx, inv["id"], as_of)
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


# Response models & routes ---------------------------------------------------------------------------

class InvoiceOut(BaseModel):
    id: str
    status: str
    vendor: str
    invoice_no: str
    invoice_date: str
    terms: str
    due_date: str
    discount_date: str | None = None
    discount: float
    total: float
    open: float
    po: str | None = None
    source_ref: str | None = None
    memo: str | None = None
    on_hold: bool
    disputed: bool
    entered_by: str | None = None
    entered_on: str
    validated_on: str | None = None
    approved_by: str | None = None


class InvoiceLineOut(BaseModel):
    line_no: int
    kind: str
    po_line: int | None = None
    item: str | None = None
    description: str | None = None
    qty: float | None = None
    unit_price: float | None = None
    amount: float
    account: str | None = None


class HoldOut(BaseModel):
    id: str
    invoice: str
    line_no: int | None = None
    reason: str
    note: str | None = None
    status: str
    placed_by: str | None = None
    placed_on: str
    released_by: str | None = None
    released_on: str | None = None
    release_note: str | None = None


class MatchLineOut(BaseModel):
    line_no: int
    result: str
    po_line: int | None = None
    po_price: float | None = None
    billed_price: float | None = None
    ordered: float | None = None
    received: float | None = None
    previously_invoiced: float | None = None
    billed_qty: float | None = None


class MatchOut(BaseModel):
    result: str
    lines: list[MatchLineOut]


class InvoicePaymentOut(BaseModel):
    payment: str
    run: str
    status: str
    amount: float
    discount: float
    released_on: str | None = None
    cleared_on: str | None = None


class HistoryOut(BaseModel):
    from_status: str | None = None
    to_status: str
    on_date: str
    by_user: str | None = None
    reason: str | None = None


class InvoiceDetail(InvoiceOut):
    lines: list[InvoiceLineOut]
    holds: list[HoldOut]
    match: MatchOut
    payments: list[InvoicePaymentOut]
    history: list[HistoryOut]
    links: dict[str, list[str]]


router = APIRouter(tags=["payables"])


@router.get("/ap-invoices", response_model=Envelope[Page[InvoiceOut]],
            summary="List AP invoices (filters: status, vendor, invoice_no, po, due_before)")
def list_invoices(status: str | None = None, vendor: str | None = None, invoice_no: str | None = None,
                  po: str | None = None, due_before: dt.date | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(ap_invoices).order_by(ap_invoices.c.id)
        if due_before:
            stmt = stmt.where(ap_invoices.c.due_date <= due_before.isoformat())
        out = paginate(tx, stmt, page, status=status, vendor_id=vendor, invoice_no=invoice_no, po_id=po)
        out["items"] = invoice_outs(tx, out["items"])   # the page at once, not a few queries per row
        return out
    return api.read(fn)


@router.get("/ap-invoices/{invoice_id}", response_model=Envelope[InvoiceDetail],
            summary="One AP invoice: lines, holds, three-way match, open amount, payments, history, links")
def get_invoice(invoice_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: invoice_detail(tx, invoice_id), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices", operation_id="ap.enter", status_code=201, response_model=Envelope[InvoiceDetail],
             summary="Enter a vendor invoice as billed (exact duplicate vendor+invoice_no is refused)")
def post_invoice(body: InvoiceIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: enter_invoice(tx, body))


@router.patch("/ap-invoices/{invoice_id}/lines/{line_no}", operation_id="ap.update_line",
              response_model=Envelope[InvoiceDetail], summary="Correct a line while the invoice is entered")
def patch_line(invoice_id: str, line_no: int, body: LinePatch, api: Api = Depends(write_api)):
    return api.write(lambda tx: update_line(tx, invoice_id, line_no, body), object_type="ap_invoice",
                     object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/holds", operation_id="ap.hold", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Put an invoice on hold with a reason code")
def post_hold(invoice_id: str, body: HoldIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: place_hold(tx, invoice_id, body), object_type="ap_invoice", object_id=invoice_id)


@router.post("/holds/{hold_id}/release", operation_id="ap.release_hold", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Release a hold")
def post_release(hold_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_hold(tx, hold_id, body), object_type="hold", object_id=hold_id)


@router.post("/ap-invoices/{invoice_id}/validate", operation_id="ap.validate", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Validate (post) an entered invoice")
def post_validate(invoice_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: validate_invoice(tx, invoice_id), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/approve", operation_id="ap.approve", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Approve a validated invoice for payment")
def post_approve(invoice_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: approve_invoice(tx, invoice_id), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/reject", operation_id="ap.reject", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Reject an entered invoice")
def post_reject(invoice_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: reject_invoice(tx, invoice_id, body), object_type="ap_invoice", object_id=invoice_id)


@router.post("/ap-invoices/{invoice_id}/void", operation_id="ap.void", status_code=201,
             response_model=Envelope[InvoiceDetail], summary="Void an invoice (reversed if validated; refused if paid)")
def post_void(invoice_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: void_invoice(tx, invoice_id, body), object_type="ap_invoice", object_id=invoice_id)
