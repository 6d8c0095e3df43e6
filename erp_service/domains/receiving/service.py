"""Receiving service functions: posting a receipt (inventory at standard, GRNI at PO price) and reversing it."""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ...kernel.errors import Problem, invalid, not_found, refused
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from .. import ledger
from ..inventory import EPS, check_location, move, value_of
from ..masterdata import get_item, lots, warehouses
from ..org import company
from ..purchasing.service import line_cents, refresh_po_status
from ..purchasing.tables import po_lines, purchase_orders
from .ledger import _invoiced_qty
from .schemas import ReceiptIn, ReverseIn
from .tables import DEFAULT_CEILING_PCT, REFUSAL_REASONS, receipt_lines, receipts


def ceiling_pct(tx: Tx) -> float:
    """The system over-receipt ceiling in percent (company setting over_receipt_ceiling_pct)."""
    row = tx.find(company, key="over_receipt_ceiling_pct")
    return float(row["value"]) if row else DEFAULT_CEILING_PCT


def _warehouse_for(tx: Tx, po: dict[str, Any], body: ReceiptIn) -> str:
    wh = body.warehouse_id or po["warehouse_id"]
    if wh is None:
        first = tx.one(select(warehouses.c.id).order_by(warehouses.c.id))
        if first is None:
            raise invalid("No warehouse exists to receive into.")
        wh = first["id"]
    return wh


def post_receipt(tx: Tx, body: ReceiptIn) -> dict[str, Any]:
    """Post a receipt: stock in at standard cost, GRNI at PO price, PPV for the difference."""
    po = tx.get(purchase_orders, body.po_id, "purchase_order")
    if po["status"] in ("draft", "approved"):
        raise refused("po_not_sent", f"Purchase order {po['id']} is {po['status']}; only a sent order can be received.",
                      status=po["status"])
    if po["status"] not in ("sent", "partially_received"):
        raise refused("po_not_open", f"Purchase order {po['id']} is {po['status']}; nothing more can be received on it.",
                      status=po["status"])
    wh = _warehouse_for(tx, po, body)
    check_location(tx, wh, None)
    pct = ceiling_pct(tx)
    seen: dict[int, float] = {}
    prepared = []
    for n, l in enumerate(body.lines, start=1):
        line = tx.find(po_lines, po_id=po["id"], line_no=l.po_line)
        if line is None:
            raise not_found("purchase order line", f"{po['id']}/{l.po_line}")
        if line["status"] != "open":
            raise refused("line_not_open", f"Line {l.po_line} of {po['id']} is {line['status']}.")
        qty, refused_qty = q4(l.qty_received), q4(l.qty_refused)
        if qty <= EPS and refused_qty <= EPS:
            raise invalid(f"Line {n}: give qty_received or qty_refused.")
        if refused_qty > EPS and l.refusal_reason not in REFUSAL_REASONS:
            raise invalid(f"Line {n}: a refused quantity needs refusal_reason ({', '.join(REFUSAL_REASONS)}).")
        if refused_qty <= EPS and l.refusal_reason is not None and l.refusal_reason not in REFUSAL_REASONS:
            raise invalid(f"Line {n}: refusal_reason must be one of {', '.join(REFUSAL_REASONS)}.")
        seen[l.po_line] = seen.get(l.po_line, 0.0) + qty
        ceiling = line["qty"] * (1 + pct / 100)
        if line["qty_received"] + seen[l.po_line] > ceiling + EPS:
            raise refused("over_receipt_ceiling",
                          f"Receiving {seen[l.po_line]} more on {po['id']} line {l.po_line} would exceed the system "
                          f"ceiling of {pct:g}% over the ordered {line['qty']}; refuse the excess instead.",
                          ordered=line["qty"], already_received=line["qty_received"], ceiling=q4(ceiling))
        item_id = l.item_id or line["item_id"]
        item = get_item(tx, item_id) if item_id else None
        if l.location_id:
            check_location(tx, wh, l.location_id)
        if item and item["lot_controlled"] and qty > EPS and (not l.lot_no or l.expiry is None):
            raise Problem(422, "lot_required", f"Line {n}: {item_id} is lot-controlled; give lot_no and expiry.")
        prepared.append((l, line, item, qty, refused_qty))
    doc = tx.create_doc("receipt", receipts, "RCV", "posted", po_id=po["id"], vendor_id=po["vendor_id"],
                        warehouse_id=wh, received_on=tx.business_date, packing_slip=body.packing_slip, note=body.note)
    grni_total = std_total = 0
    expense: dict[str, int] = {}
    for n, (l, line, item, qty, refused_qty) in enumerate(prepared, start=1):
        value = line_cents(qty, line["unit_price"])
        std = value_of(tx, item["id"], qty) if item else value
        lot_no = l.lot_no if qty > EPS else None
        expiry = l.expiry.isoformat() if l.expiry and qty > EPS else None
        if item and lot_no and tx.find(lots, item_id=item["id"], lot_no=lot_no) is None:
            tx.insert(lots, item_id=item["id"], lot_no=lot_no, expiry=expiry, vendor_id=po["vendor_id"],
                      first_received=tx.business_date)
        tx.insert(receipt_lines, receipt_id=doc["id"], line_no=n, po_line=line["line_no"],
                  ordered_item_id=line["item_id"], item_id=item["id"] if item else None,
                  substitution=1 if (item and line["item_id"] and item["id"] != line["item_id"]) else 0,
                  qty_received=qty, qty_refused=refused_qty, refusal_reason=l.refusal_reason, lot_no=lot_no,
                  expiry=expiry, location_id=l.location_id, unit_price=line["unit_price"], value_cents=value,
                  std_value_cents=std)
        if item and qty > EPS:
            move(tx, item_id=item["id"], warehouse_id=wh, location_id=l.location_id, lot_no=lot_no, qty=qty,
                 kind="receipt", doc_type="receipt", doc_id=doc["id"], doc_line=n, value_cents=std)
            std_total += std
        elif qty > EPS:
            acct = line["account_id"] or "6900"
            expense[acct] = expense.get(acct, 0) + value
        grni_total += value
        tx.touch("purchase_order", po["id"])
        tx.conn.execute(po_lines.update().where(po_lines.c.po_id == po["id"], po_lines.c.line_no == line["line_no"])
                        .values(qty_received=func.round(po_lines.c.qty_received + qty, 4),
                                qty_refused=func.round(po_lines.c.qty_refused + refused_qty, 4)))
    je = ledger.post(tx, source="receiving", source_ref=doc["id"], memo=f"Receipt {doc['id']} on {po['id']}",
                     lines=_receipt_lines(doc["id"], po["vendor_id"], std_total, grni_total, expense))
    tx.update(receipts, doc["id"], je_id=je or None)
    refresh_po_status(tx, po["id"], f"receipt {doc['id']}")
    return receipt_view(tx, doc["id"])


def _receipt_lines(ref: str, vendor_id: str, std_total: int, grni_total: int, expense: dict[str, int],
                   sign: int = 1) -> list[ledger.Line]:
    ppv = grni_total - std_total - sum(expense.values())
    out = [ledger.Line("rule:inventory", sign * std_total, party_type="item", doc_ref=ref),
           ledger.Line("rule:grni", -sign * grni_total, party_type="vendor", party_id=vendor_id, doc_ref=ref),
           ledger.Line("rule:ppv", sign * ppv, doc_ref=ref)]
    out += [ledger.Line(acct, sign * v, doc_ref=ref) for acct, v in sorted(expense.items())]
    return out


def reverse_receipt(tx: Tx, receipt_id: str, body: ReverseIn) -> dict[str, Any]:
    """Reverse a posted receipt that has not been invoiced: stock out, GRNI and PPV back."""
    rcv = tx.get(receipts, receipt_id, "receipt")
    if rcv["status"] != "posted":
        raise refused("bad_status", f"receipt {receipt_id} is {rcv['status']}; only a posted receipt can be reversed.",
                      status=rcv["status"])
    back: dict[int, float] = {}
    for rl in tx.rows(receipt_lines, receipt_id=receipt_id):
        back[rl["po_line"]] = back.get(rl["po_line"], 0.0) + rl["qty_received"]
    for po_line, qty in sorted(back.items()):
        line = tx.find(po_lines, po_id=rcv["po_id"], line_no=po_line)
        billed = _invoiced_qty(tx, rcv["po_id"], po_line)
        if billed > (line["qty_received"] - qty) + EPS:  # type: ignore[index]
            raise refused("has_invoices", f"{billed} of {rcv['po_id']} line {po_line} is already invoiced; "
                          f"reversing {receipt_id} would leave it billed but not received. Void or credit the "
                          f"invoice first.")
    tx.set_status("receipt", receipts, receipt_id, "reversed", body.reason, allowed_from=["posted"],
                  reversed_on=tx.business_date)
    std_total = grni_total = 0
    expense: dict[str, int] = {}
    for rl in tx.rows(receipt_lines, receipt_id=receipt_id):
        if rl["item_id"] and rl["qty_received"] > EPS:
            move(tx, item_id=rl["item_id"], warehouse_id=rcv["warehouse_id"], location_id=rl["location_id"],
                 lot_no=rl["lot_no"], qty=-rl["qty_received"], kind="receipt_reversal", doc_type="receipt",
                 doc_id=receipt_id, doc_line=rl["line_no"], value_cents=-rl["std_value_cents"])
            std_total += rl["std_value_cents"]
        elif rl["qty_received"] > EPS:
            line = tx.find(po_lines, po_id=rcv["po_id"], line_no=rl["po_line"])
            acct = (line or {}).get("account_id") or "6900"
            expense[acct] = expense.get(acct, 0) + rl["value_cents"]
        grni_total += rl["value_cents"]
        tx.touch("purchase_order", rcv["po_id"])
        tx.conn.execute(po_lines.update().where(po_lines.c.po_id == rcv["po_id"], po_lines.c.line_no == rl["po_line"])
                        .values(qty_received=func.max(func.round(po_lines.c.qty_received - rl["qty_received"], 4), 0.0),
                                qty_refused=func.max(func.round(po_lines.c.qty_refused - rl["qty_refused"], 4), 0.0)))
    je = ledger.post(tx, source="receiving", source_ref=receipt_id, memo=f"Reversal of receipt {receipt_id}",
                     lines=_receipt_lines(receipt_id, rcv["vendor_id"], std_total, grni_total, expense, sign=-1))
    tx.update(receipts, receipt_id, reversal_je_id=je or None)
    po = tx.get(purchase_orders, rcv["po_id"])
    if po["status"] in ("received", "partially_received"):
        refresh_po_status(tx, po["id"], f"receipt {receipt_id} reversed")
    return receipt_view(tx, receipt_id)


def receipt_view(tx: Tx, receipt_id: str) -> dict[str, Any]:
    """A receipt with lines, history and links."""
    rcv = tx.get(receipts, receipt_id, "receipt")
    lines = []
    for rl in tx.rows(receipt_lines, receipt_id=receipt_id):
        out = {k: v for k, v in rl.items() if not k.endswith("_cents")}
        out["substitution"] = bool(rl["substitution"])
        out["value"] = from_cents(rl["value_cents"])
        out["std_value"] = from_cents(rl["std_value_cents"])
        lines.append(out)
    return {**{k: v for k, v in rcv.items() if k != "created_wall"}, "lines": lines,
            "history": tx.history("receipt", receipt_id),
            "links": {"purchase_order": [rcv["po_id"]], "vendor": [rcv["vendor_id"]],
                      "journal_entry": [j for j in (rcv["je_id"], rcv["reversal_je_id"]) if j]}}
