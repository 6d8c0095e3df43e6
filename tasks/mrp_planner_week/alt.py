"""mrp-planner-week: the second, independent policy (issue 41, item 4), written from the handbook
alone.

It is mounted alone into `alt` cells, so it imports only the standard library and
`agent_sandbox`. Its route, where the handbook leaves a choice:

- Write hygiene: no Idempotency-Keys. After a write fails (503, a timeout) it reads what the ERP
  recorded — the MRP runs, the suggestion's status, the vendor requests on the PO line — and sends
  again only when nothing was recorded (GEN-1.3).
- The lead-time notice is applied, and the notice message marked processed with the item as its
  reference, before MRP runs (PLN-1.1).
- Order of work: the action messages first (PLN-3.1), then the firm planned orders, late ones
  first, each late purchase order expedited right after its release (PLN-2.3), items in reverse
  order.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import send_checked

# PLN-1.1: lead-time notices ----------------------------------------------------------------------

LEAD_TIME = re.compile(r"lead[- ]time", re.I)
NEW_DAYS = re.compile(r"\bnow\s+(\d+)\s*(calendar\s+|business\s+|working\s+)?(days?|weeks?)", re.I)


def notice_of(message: dict[str, Any], items: set[str]) -> tuple[str, int] | None:
    """(item, lead time in calendar days) announced by a lead-time notice, or None."""
    text = f"{message.get('subject', '')}\n{message.get('body', '')}"
    if not LEAD_TIME.search(text):
        return None
    named = [tok for tok in re.findall(r"[A-Z0-9][A-Z0-9-]{2,}", text) if tok in items]
    m = NEW_DAYS.search(text)
    if not named or not m:
        return None
    n = int(m.group(1))
    if m.group(3).lower().startswith("week"):
        n *= 7
    elif (m.group(2) or "").strip().lower() in ("business", "working"):
        n = n // 5 * 7 + n % 5  # the handbook keeps lead time in calendar days
    return named[0], n


def apply_lead_time_notices(client: ErpClient) -> None:
    """Every unhandled lead-time notice in the planning box goes onto its item record."""
    items = {i["id"]: i for i in client.list_all("/items")}
    for msg in sorted(client.inbox("planning"), key=lambda m: m["id"]):
        if msg.get("disposition"):
            continue
        full = client.read_message(msg["id"])
        found = notice_of(full, set(items))
        if not found:
            continue
        item, days = found
        if items[item].get("lead_time_days") != days:
            send_checked(client, "PATCH", f"/items/{item}", {"lead_time_days": days},
                         partial(_item_has, client, item, days))
        send_checked(client, "POST", f"/inbox/{msg['id']}/disposition",
                     {"disposition": "processed", "ref": item,
                      "note": f"Vendor's new lead time ({days} calendar days) entered on the item before MRP."},
                     partial(_disposed, client, msg["id"]))


def _item_has(client: ErpClient, item: str, days: int) -> Any:
    row = client.get(f"/items/{item}")
    return row if row.get("lead_time_days") == days else None


def _disposed(client: ErpClient, msg_id: str) -> Any:
    full = client.read_message(msg_id)
    return full if full.get("disposition") else None


# PLN-1.2: the run --------------------------------------------------------------------------------

def run_mrp(client: ErpClient) -> str:
    """One run with the ERP's defaults (eight weeks, five firm days)."""
    before = {r["id"] for r in client.list_all("/mrp/runs")}
    run = send_checked(client, "POST", "/mrp/runs", {}, partial(_new_run, client, before))
    return str(run["id"])


def _new_run(client: ErpClient, before: set[str]) -> Any:
    fresh = [r for r in client.list_all("/mrp/runs") if r["id"] not in before]
    return fresh[0] if fresh else None


# PLN-2.x and PLN-3.x: working the suggestions -----------------------------------------------------

def release(client: ErpClient, sug: dict[str, Any]) -> dict[str, Any]:
    """Release one suggestion as MRP computed it (PLN-2.2: no overrides)."""
    return dict(send_checked(client, "POST", f"/mrp/suggestions/{sug['id']}/release", {},
                             partial(_released, client, sug)))


def _released(client: ErpClient, sug: dict[str, Any]) -> Any:
    for s in client.list_all("/mrp/suggestions", run_id=sug["run_id"], item_id=sug["item_id"]):
        if s["id"] == sug["id"] and s["status"] == "released":
            return s
    return None


def open_request(client: ErpClient, kind: str, po_id: str, po_line: int | None) -> bool:
    """PLN-3.2: a request of this kind for this PO line that the vendor has not answered yet."""
    return any(vr["kind"] == kind and vr["po_id"] == po_id and (vr.get("po_line") or 1) == (po_line or 1)
               and vr["status"] == "open" for vr in client.list_all("/vendor-requests"))


def expedite_new_order(client: ErpClient, sug: dict[str, Any], released: dict[str, Any]) -> None:
    """PLN-2.3: ask the vendor for the new order's line on the need date."""
    po = client.get(f"/purchase-orders/{released['released_doc']}")
    line = next(ln for ln in po["lines"] if ln["item_id"] == sug["item_id"])
    if open_request(client, "expedite", po["id"], line["line_no"]):
        return
    body = {"kind": "expedite", "vendor_id": po["vendor_id"], "po_id": po["id"], "po_line": line["line_no"],
            "requested_date": sug["due_date"],
            "note": f"This order was placed late against your lead time; we need it delivered by {sug['due_date']}."}
    send_checked(client, "POST", "/vendor-requests", body,
                 partial(_request_recorded, client, po["id"], line["line_no"]))


def _request_recorded(client: ErpClient, po_id: str, po_line: int) -> Any:
    found = [vr for vr in client.list_all("/vendor-requests") if vr["kind"] == "expedite"
             and vr["po_id"] == po_id and (vr.get("po_line") or 1) == po_line]
    return found[-1] if found else None


def work_suggestions(client: ErpClient, run_id: str) -> None:
    """Action messages first, then firm planned orders (late first, items in reverse order)."""
    suggestions = [s for s in client.list_all("/mrp/suggestions", run_id=run_id) if s["status"] == "open"]
    for sug in sorted((s for s in suggestions if s["kind"] in ("expedite", "defer")), key=lambda s: s["id"]):
        if open_request(client, sug["kind"], sug["po_id"], sug.get("po_line")):
            continue  # PLN-3.2: the vendor still owes an answer to the same request
        release(client, sug)
    # PLN-2.1 and PLN-2.3: firm planned orders, and a late planned PO "at once" in any case.
    planned = [s for s in suggestions if s["kind"] in ("planned_po", "planned_wo")
               and (s["firm"] or (s["kind"] == "planned_po" and s.get("late")))]
    late = sorted((s for s in planned if s.get("late")), key=lambda s: (s["item_id"], s["due_date"]))
    rest = sorted((s for s in planned if not s.get("late")), key=lambda s: (s["item_id"], s["due_date"]), reverse=True)
    for sug in late + rest:
        released = release(client, sug)
        if sug["kind"] == "planned_po" and sug.get("late"):
            expedite_new_order(client, sug, released)


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The one turn: notices, the run, its suggestions."""
    apply_lead_time_notices(client)
    work_suggestions(client, run_mrp(client))


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
