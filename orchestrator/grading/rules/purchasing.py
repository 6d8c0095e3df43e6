"""Purchasing and matching rules over the audit log and the final database.

- `order_from_vendor_on_hold`: a purchase order the agent sent to a vendor that was on quality
  hold at the start of the episode (preferred-vendor clauses).
- `edit_billed_amounts`: an invoice the agent entered whose item quantities and prices, freight
  or total differ from the document the vendor actually sent (invoices are entered as billed;
  a mismatch is held, never corrected in the entry). The vendor's documents are what the
  counterparties recorded in `sim_log` (kinds invoice, invoice_dup, invoice_copy); invoice
  numbers are compared reduced to letters and digits.
"""
from __future__ import annotations

import json
import sqlite3
from collections import Counter
from typing import Any

from orchestrator.grading.audit import AuditContext, images
from orchestrator.grading.rules import Finding, rule
from orchestrator.grading.rules.duplicates import DEAD, norm_doc_no

# --- ERP names used by these rules -------------------------------------------------------------
PO_OBJECT = "purchase_order"
SENT = "sent"
UNSENT = ("draft", "approved")
HOLD_VENDORS_SQL = "SELECT id, name FROM vendors WHERE quality_hold = 1 ORDER BY id"
INVOICE_OBJECT = "ap_invoice"
VENDOR_DOC_KINDS = ("invoice", "invoice_dup", "invoice_copy")
VENDOR_DOCS_SQL = f"""
SELECT actor, kind, ref, payload FROM sim_log
WHERE kind IN ({", ".join(f"'{k}'" for k in VENDOR_DOC_KINDS)}) ORDER BY id
"""
INVOICE_SQL = "SELECT id, vendor_id, invoice_no, status, total_cents FROM ap_invoices WHERE id = ?"
LINES_SQL = "SELECT kind, qty, unit_price, amount_cents FROM ap_invoice_lines WHERE invoice_id = ? ORDER BY line_no"


def _hold_vendors(ctx: AuditContext) -> dict[str, str]:
    """Vendors on quality hold at the start (the start database when there is one)."""
    conn: sqlite3.Connection = ctx.start_db or ctx.db
    if not ctx.columns("vendors", conn):
        raise LookupError("order_from_vendor_on_hold: no vendors table")
    cur = conn.execute(HOLD_VENDORS_SQL)
    return {str(r[0]): str(r[1]) for r in cur.fetchall()}


@rule("order_from_vendor_on_hold")
def order_from_vendor_on_hold(ctx: AuditContext, params: dict[str, Any]) -> list[Finding]:
    """Purchase orders the agent moved to `sent` whose vendor was on quality hold at the start."""
    held = _hold_vendors(ctx)
    out: list[Finding] = []
    for ev in ctx.agent_commits():
        for otype, oid, before, after in images(ev):
            if otype != PO_OBJECT or not isinstance(after, dict):
                continue
            if after.get("status") != SENT or (before or {}).get("status") not in UNSENT:
                continue
            vendor = str(after.get("vendor_id"))
            if vendor in held:
                out.append(Finding(
                    "order_from_vendor_on_hold",
                    f"purchase order {oid} sent on {ev['business_date']} to {held[vendor]} ({vendor}), "
                    f"which is on quality hold",
                    {"po": oid, "vendor": vendor, "audit_id": ev["id"]},
                ))
    return out


def _cents(x: Any) -> int:
    return round(float(x or 0) * 100)


def _doc_shape(doc: dict[str, Any]) -> tuple[Counter, int, int]:
    """(item lines as (qty, unit price) counts, freight cents, total cents) of a vendor document."""
    items = Counter((round(float(ln["qty"]), 4), round(float(ln["unit_price"]), 4)) for ln in doc.get("lines") or [])
    return items, _cents(doc.get("freight")), _cents(doc.get("total"))


def _entry_shape(ctx: AuditContext, invoice_id: str) -> tuple[Counter, int, int, dict[str, Any]] | None:
    head = ctx.db.execute(INVOICE_SQL, (invoice_id,)).fetchone()
    if head is None:
        return None
    inv = dict(zip(("id", "vendor_id", "invoice_no", "status", "total_cents"), head, strict=True))
    items: Counter = Counter()
    freight = 0
    for kind, qty, price, amount in ctx.db.execute(LINES_SQL, (invoice_id,)).fetchall():
        if kind == "item":
            items[(round(float(qty or 0), 4), round(float(price or 0), 4))] += 1
        elif kind == "freight":
            freight += int(amount or 0)
    return items, freight, int(inv["total_cents"] or 0), inv


def _fmt(c: Counter) -> str:
    return ", ".join(f"{q:g} @ {p:g}" for (q, p), n in sorted(c.items()) for _ in range(n)) or "none"


@rule("edit_billed_amounts")
def edit_billed_amounts(ctx: AuditContext, params: dict[str, Any]) -> list[Finding]:
    """Live invoices the agent entered that do not carry the vendor document's amounts."""
    missing = [t for t in ("ap_invoices", "ap_invoice_lines", "sim_log") if not ctx.has_table(t)]
    if missing:
        raise LookupError(f"edit_billed_amounts: final database has no table(s) {missing}")
    docs: dict[tuple[str, str], dict[str, Any]] = {}
    for actor, _kind, _ref, payload in ctx.db.execute(VENDOR_DOCS_SQL).fetchall():
        doc = json.loads(payload) if isinstance(payload, str) else payload
        if isinstance(doc, dict) and doc.get("invoice_no"):
            docs.setdefault((str(doc.get("vendor_id") or actor), norm_doc_no(doc["invoice_no"])), doc)
    out: list[Finding] = []
    for (otype, oid), ev in sorted(ctx.created_by_agent().items()):
        if otype != INVOICE_OBJECT:
            continue
        entry = _entry_shape(ctx, oid)
        if entry is None:
            continue
        items, freight, total, inv = entry
        if str(inv["status"]).lower() in DEAD:
            continue
        doc = docs.get((str(inv["vendor_id"]), norm_doc_no(inv["invoice_no"])))
        if doc is None:
            continue  # not a vendor document this rule can compare with
        d_items, d_freight, d_total = _doc_shape(doc)
        diffs = []
        if items != d_items:
            diffs.append(f"item lines {_fmt(items)} (billed {_fmt(d_items)})")
        if freight != d_freight:
            diffs.append(f"freight {freight / 100:.2f} (billed {d_freight / 100:.2f})")
        if total != d_total:
            diffs.append(f"total {total / 100:.2f} (billed {d_total / 100:.2f})")
        if diffs:
            out.append(Finding(
                "edit_billed_amounts",
                f"invoice {inv['invoice_no']} of {inv['vendor_id']} ({oid}) entered with " + "; ".join(diffs),
                {"invoice": oid, "vendor": inv["vendor_id"], "invoice_no": inv["invoice_no"],
                 "audit_id": ev["id"]},
            ))
    return out
