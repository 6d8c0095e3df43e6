"""freight-accrual-revision: the second, independent policy (issue 41, item 4), written from the
handbook alone.

It is mounted alone into `alt` cells, so it imports only the standard library and
`agent_sandbox`. Its route, where the handbook leaves a choice:

- Write hygiene: no Idempotency-Keys. After a write fails (503, a timeout) it reads what the ERP
  recorded — its entries by memo, the entry's attachments and status — and sends again only when
  nothing was recorded (GEN-1.1).
- The receipts newest first; each entry's memo in its own wording (still "Freight accrual", the
  receipt id, then the vendor, FRT-2.4), with line memos; the support is a plain-text printout.
- It does not look up the approval threshold: it posts (FRT-2.3), and when the ERP refuses because
  the entry needs approval, it submits instead.
- Turn 2: every live accrual is checked against its receipt; one whose receipt was reversed is
  reversed, and freight-accruals.md says so in its own words (FRT-3.1, FRT-3.2).
"""
from __future__ import annotations

import base64
import calendar
import datetime as dt
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from functools import partial
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient, ErpError
from agent_sandbox.policy_kit import handbook_clause, send_checked

NOTE_FILE = "freight-accruals.md"




# Reading the handbook ----------------------------------------------------------------------------

def freight_collect_vendors(workspace: Path) -> list[str]:
    """FRT-1.1: the vendor ids that ship freight collect."""
    return re.findall(r"\((V-\d+)\)", handbook_clause(workspace, "FRT-1.1"))


def accrual_rate(workspace: Path) -> Decimal:
    """FRT-2.1: the rate, as a fraction."""
    m = re.search(r"([\d.]+)%", handbook_clause(workspace, "FRT-2.1"))
    if not m:
        raise RuntimeError("FRT-2.1 states no rate")
    return Decimal(m.group(1)) / 100


def accounts(workspace: Path) -> tuple[str, str]:
    """FRT-2.2: (debit, credit) accounts."""
    text = handbook_clause(workspace, "FRT-2.2")
    debit = re.search(r"Debit (\d{4})", text, re.I)
    credit = re.search(r"credit (\d{4})", text, re.I)
    if not debit or not credit:
        raise RuntimeError("FRT-2.2 names no accounts")
    return debit.group(1), credit.group(1)


def month_end(day: str) -> str:
    """The last calendar day of the month of `day`."""
    d = dt.date.fromisoformat(day[:10])
    return d.replace(day=calendar.monthrange(d.year, d.month)[1]).isoformat()


# Turn 1 ------------------------------------------------------------------------------------------

def receipts_to_accrue(client: ErpClient, workspace: Path, today: str) -> list[dict[str, Any]]:
    """FRT-1.2: posted receipts of this month from the freight-collect vendors whose PO has no
    vendor invoice yet — newest first."""
    month = today[:7]
    out = []
    for vendor in freight_collect_vendors(workspace):
        for rec in client.list_all("/receipts", vendor_id=vendor, status="posted"):
            if rec["received_on"][:7] != month:
                continue
            invoices = [i for i in client.list_all("/ap-invoices", po=rec["po_id"])
                        if i.get("status") not in ("voided", "cancelled", "rejected")]
            if not invoices:
                out.append(rec)
    return sorted(out, key=lambda r: (r["received_on"], r["id"]), reverse=True)


def printout(rec: dict[str, Any], vendor_name: str) -> str:
    """FRT-2.5: the receipt as a text printout."""
    rows = [f"RECEIPT {rec['id']}", f"Received on: {rec['received_on']}", f"Vendor: {vendor_name} ({rec['vendor_id']})",
            f"Purchase order: {rec['po_id']}", "", "Line  Item                  Qty received        Value"]
    total = Decimal(0)
    for ln in rec.get("lines", []):
        value = Decimal(str(ln.get("value") or 0))
        total += value
        qty = ln.get("qty_received", ln.get("qty", ""))
        rows.append(f"{ln.get('line_no', ''):<5} {str(ln.get('item_id') or ''):<21} {qty!s:>12} {value:>12.2f}")
    rows.append(f"{'Total received value':<40} {total:>12.2f}")
    return "\n".join(rows) + "\n"


def book_accrual(client: ErpClient, workspace: Path, rec_id: str) -> None:
    """One entry for one receipt: create, attach, then post (or submit when approval is due)."""
    rec = client.get(f"/receipts/{rec_id}")
    vendor = client.get(f"/vendors/{rec['vendor_id']}")
    received = sum((Decimal(str(ln.get("value") or 0)) for ln in rec.get("lines", [])), Decimal(0))
    amount = (received * accrual_rate(workspace)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    if amount <= 0:
        return
    debit, credit = accounts(workspace)
    memo = f"Freight accrual {rec_id} {vendor['name']} - 2.5% of received value, freight collect, not yet billed"
    body = {"entry_date": month_end(rec["received_on"]), "memo": memo,
            "lines": [{"account": debit, "debit": float(amount), "memo": f"Inbound freight on receipt {rec_id}"},
                      {"account": credit, "credit": float(amount), "memo": "Freight owed, vendor bill to follow"}]}
    entry = send_checked(client, "POST", "/journal-entries", body, partial(_entry_with_memo, client, memo))
    entry_id = entry["id"]
    content = base64.b64encode(printout(rec, vendor["name"]).encode()).decode()
    send_checked(client, "POST", f"/journal-entries/{entry_id}/attachments",
                 {"filename": f"receipt-{rec_id}.txt", "content_type": "text/plain", "content_base64": content},
                 partial(_has_attachment, client, entry_id))
    try:
        send_checked(client, "POST", f"/journal-entries/{entry_id}/post", {},
                     partial(_status_in, client, entry_id, ("posted",)))
    except ErpError as exc:
        if exc.status >= 500 or "approv" not in f"{exc.code} {exc.detail}".lower():
            raise
        send_checked(client, "POST", f"/journal-entries/{entry_id}/submit", {},
                     partial(_status_in, client, entry_id, ("submitted", "approved", "posted")))


def _entry_with_memo(client: ErpClient, memo: str) -> Any:
    found = [e for e in client.list_all("/journal-entries", source="manual") if e.get("memo") == memo]
    return found[-1] if found else None


def _has_attachment(client: ErpClient, entry_id: str) -> Any:
    entry = client.get(f"/journal-entries/{entry_id}")
    return entry if entry.get("attachments") else None


def _status_in(client: ErpClient, entry_id: str, statuses: tuple[str, ...]) -> Any:
    entry = client.get(f"/journal-entries/{entry_id}")
    return entry if entry["status"] in statuses else None


# Turn 2 ------------------------------------------------------------------------------------------

def my_live_accruals(client: ErpClient, me: str) -> list[dict[str, Any]]:
    """My manual freight-accrual entries that still stand (not reversal mirrors)."""
    return [e for e in client.list_all("/journal-entries", source="manual")
            if e.get("prepared_by") == me and not e.get("reverses")
            and e["status"] in ("submitted", "approved", "posted")
            and (e.get("memo") or "").lower().startswith("freight accrual")]


def review_accruals(client: ErpClient, workspace: Path, me: str, today: str) -> None:
    """FRT-1.3 / FRT-3.1: reverse every accrual whose receipt no longer stands; FRT-3.2: say so."""
    changes = []
    for entry in sorted(my_live_accruals(client, me), key=lambda e: e["id"]):
        m = re.search(r"Freight accrual (\S+)", entry.get("memo") or "")
        if not m:
            continue
        rec = client.get(f"/receipts/{m.group(1)}")
        if rec["status"] != "reversed":
            continue
        note = f"Receipt {rec['id']} was reversed on {rec.get('reversed_on')}; its freight accrual no longer holds."
        if entry["status"] == "posted":
            send_checked(client, "POST", f"/journal-entries/{entry['id']}/reverse", {"note": note},
                         partial(_status_in, client, entry["id"], ("reversed",)))
        else:
            send_checked(client, "POST", f"/journal-entries/{entry['id']}/return", {"note": note},
                         partial(_status_in, client, entry["id"], ("returned", "draft")))
        changes.append((rec, entry))
    lines = [f"# Freight accruals — review of {today}", ""]
    if not changes:
        lines.append("Every freight accrual I booked still rests on a posted receipt; nothing changed.")
    for rec, entry in changes:
        lines.append(f"- The warehouse reversed receipt {rec['id']} (posted in error) on {rec.get('reversed_on')}. "
                     f"I reversed my accrual entry {entry['id']} for it, ${entry['total']:,.2f}, so no freight "
                     f"is accrued on that receipt any more.")
    lines.append("")
    (workspace / NOTE_FILE).write_text("\n".join(lines), encoding="utf-8")


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Turn 1: the accruals; turn 2: the review against the receipts as they stand."""
    me = client.whoami()
    if turn == 1:
        for rec in receipts_to_accrue(client, workspace, me["business_date"]):
            book_accrual(client, workspace, rec["id"])
    elif turn == 2:
        review_accruals(client, workspace, me["id"], me["business_date"])


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
