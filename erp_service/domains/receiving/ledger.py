"""The GRNI subledger: what was received less what invoices cleared (the facts payables registers)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select

from ...kernel.tx import Tx
from .. import ledger
from ..purchasing.tables import po_lines, purchase_orders
from .tables import receipt_lines, receipts

# GRNI ------------------------------------------------------------------------------------------

# Invoices are downstream of receipts: payables (which imports receiving) registers what
# receiving needs to know about them. Unregistered, the questions are errors, never zero.
_INVOICE_FACTS: dict[str, Callable[..., Any]] = {}


def register_invoice_facts(*, grni_cleared_cents: Callable[..., int], invoiced_qty: Callable[..., float]) -> None:
    """Install payables' answers: GRNI relieved by validated invoices
    (``fn(conn, as_of, po_id, po_line) -> cents``) and the quantity billed on a PO line
    (``fn(tx, po_id, po_line) -> qty``)."""
    _INVOICE_FACTS.update(grni_cleared_cents=grni_cleared_cents, invoiced_qty=invoiced_qty)


def _invoice_fact(name: str) -> Callable[..., Any]:
    fn = _INVOICE_FACTS.get(name)
    if fn is None:
        raise RuntimeError(f"receiving needs {name} from payables, which is not imported")
    return fn


def _cleared(conn, as_of: str | None = None, po_id: str | None = None, po_line: int | None = None) -> int:
    """GRNI relieved by validated vendor invoices (owned by payables)."""
    return _invoice_fact("grni_cleared_cents")(conn, as_of, po_id, po_line)


def _invoiced_qty(tx: Tx, po_id: str, po_line: int) -> float:
    return _invoice_fact("invoiced_qty")(tx, po_id, po_line)


def received_cents(conn, as_of: str | None = None, po_id: str | None = None, po_line: int | None = None) -> int:
    """Value received at PO price, net of reversals, up to `as_of`."""
    def total(stmt) -> int:
        return int(conn.execute(stmt).scalar() or 0)
    recv = select(func.coalesce(func.sum(receipt_lines.c.value_cents), 0)).join(
        receipts, receipts.c.id == receipt_lines.c.receipt_id)
    if po_id is not None:
        recv = recv.where(receipts.c.po_id == po_id)
    if po_line is not None:
        recv = recv.where(receipt_lines.c.po_line == po_line)
    rev = recv.where(receipts.c.status == "reversed")
    if as_of:
        recv = recv.where(receipts.c.received_on <= as_of)
        rev = rev.where(receipts.c.reversed_on <= as_of)
    return total(recv) - total(rev)


def grni_lines(tx: Tx, *, as_of: str | None = None, vendor_id: str | None = None,
               po_id: str | None = None) -> list[dict[str, Any]]:
    """Per PO line: value received (PO price), value invoiced (cleared), and what is still open."""
    pol, pos = po_lines, purchase_orders
    stmt = (select(pos.c.id, pos.c.vendor_id, pol.c.line_no, pol.c.item_id, pol.c.unit_price)
            .join(pol, pol.c.po_id == pos.c.id).order_by(pos.c.id, pol.c.line_no))
    if vendor_id:
        stmt = stmt.where(pos.c.vendor_id == vendor_id)
    if po_id:
        stmt = stmt.where(pos.c.id == po_id)
    out = []
    for r in tx.all(stmt):
        recv = received_cents(tx.conn, as_of, r["id"], r["line_no"])
        if recv == 0:
            continue
        cleared = _cleared(tx.conn, as_of, r["id"], r["line_no"])
        first = tx.scalar(select(func.min(receipts.c.received_on)).join(
            receipt_lines, receipt_lines.c.receipt_id == receipts.c.id).where(
            receipts.c.po_id == r["id"], receipt_lines.c.po_line == r["line_no"], receipts.c.status == "posted"))
        if recv - cleared != 0:
            out.append({"po_id": r["id"], "po_line": r["line_no"], "vendor_id": r["vendor_id"], "item_id": r["item_id"],
                        "unit_price": r["unit_price"], "received_cents": recv, "invoiced_cents": cleared,
                        "open_cents": recv - cleared, "first_received": first})
    return out


def grni_subledger(conn, as_of: str | None) -> int:
    """GRNI owed (debit positive, so normally negative): received at PO price − reversed −
    cleared by validated invoices."""
    return -(received_cents(conn, as_of) - _cleared(conn, as_of))


ledger.register_subledger("grni", grni_subledger)
