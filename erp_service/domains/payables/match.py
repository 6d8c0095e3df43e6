"""Three-way match: an invoice's item lines against their PO lines (price) and receipts
(quantity); and the quantity already billed on a PO line (which receiving checks before a
receipt is reversed)."""
from __future__ import annotations

from sqlalchemy import func, select

from ...kernel.tx import Tx
from ..purchasing.tables import po_lines
from ..receiving import receipt_lines, receipts
from .tables import PRICE_TOLERANCE, ap_invoice_lines, ap_invoices


def po_line_facts(tx: Tx, po_id: str | None, line_no: int | None) -> dict | None:
    """Ordered qty, PO unit price, item and received qty of one PO line, or None when the
    invoice names no PO line or the line does not exist."""
    if not po_id or line_no is None:
        return None
    row = tx.one(select(po_lines).where(po_lines.c.po_id == po_id, po_lines.c.line_no == line_no))
    if row is None:
        return None
    return {"item": row["item_id"], "ordered": float(row["qty"] or 0), "price": float(row["unit_price"] or 0),
            "received": received_qty(tx, po_id, line_no)}


def received_qty(tx: Tx, po_id: str, line_no: int) -> float:
    """Net quantity received on a PO line (receipts not reversed)."""
    stmt = (select(func.coalesce(func.sum(receipt_lines.c.qty_received), 0))
            .select_from(receipt_lines.join(receipts, receipts.c.id == receipt_lines.c.receipt_id))
            .where(receipts.c.po_id == po_id, receipt_lines.c.po_line == line_no, receipts.c.status != "reversed"))
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
