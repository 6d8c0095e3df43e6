"""Invoices as the API shows them: the list view (one at a time or a whole page in a few
queries) and the detail with lines, holds, match, payments, history and links."""
from __future__ import annotations

from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .. import ledger
from .disputes import disputed_invoice_ids, is_disputed
from .match import three_way_match
from .settlement import open_cents, open_cents_of, settlement
from .tables import ap_invoice_lines, ap_invoices, holds


def line_out(ln: dict) -> dict:
    """One invoice line as shown."""
    return {"line_no": ln["line_no"], "kind": ln["kind"], "po_line": ln["po_line"], "item": ln["item_id"],
            "description": ln["description"], "qty": ln["qty"], "unit_price": ln["unit_price"],
            "amount": from_cents(ln["amount_cents"]), "account": ln["account_id"]}


def hold_out(h: dict) -> dict:
    """One hold as shown."""
    return {"id": h["id"], "invoice": h["invoice_id"], "line_no": h["line_no"], "reason": h["reason"],
            "note": h["note"], "status": h["status"], "placed_by": h["placed_by"], "placed_on": h["placed_on"],
            "released_by": h["released_by"], "released_on": h["released_on"], "release_note": h["release_note"]}


def invoice_out(tx: Tx, inv: dict) -> dict:
    """The list view of an invoice."""
    return _invoice_view(inv, open_cents(tx, inv), is_disputed(tx, inv["id"]))


def invoice_outs(tx: Tx, invs: list[dict]) -> list[dict]:
    """`invoice_out` of a whole page: settled amounts and dispute flags in a few set-based
    queries instead of about four per row."""
    settled = settlement().settled_cents_by_invoice(tx, [inv["id"] for inv in invs])
    disputed = disputed_invoice_ids(tx, invs)
    return [_invoice_view(inv, open_cents_of(inv, settled.get(inv["id"], 0)), inv["id"] in disputed) for inv in invs]


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
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    lines = tx.rows(ap_invoice_lines, invoice_id=invoice_id)
    out = invoice_out(tx, inv)
    pays = settlement().invoice_payments(tx, invoice_id)
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
