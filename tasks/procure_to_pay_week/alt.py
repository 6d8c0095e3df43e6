"""procure-to-pay-week: the alt policy, a second way of doing the week written from the handbook
(purchasing.md, receiving.md, payables.md), the turn requests and the ERP's API alone.

How it differs from the oracle on purpose (issue 41, item 4):
- Orders are built step by step: an empty draft per vendor into the main warehouse, then one
  `POST /purchase-orders/{id}/lines` per item (need-by on the line, not the header), then sent;
  vendors are worked in reverse name order.
- Writes carry no Idempotency-Key. After a failed or unanswered write the policy looks in the
  ERP for what the write would have made (GEN-1.3: "check what the ERP recorded") and re-sends
  only when nothing is there.
- Receipts are posted per line (one receipt per packing-slip line, all with the slip number).
- Notes and the handoff are written in its own words.

It imports only the standard library and `agent_sandbox` (it is mounted alone as the policy).
"""
from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import checked_write

ME = "riley.park"
MAIN_WAREHOUSE = "WH-MAIN"


# -- write hygiene: check before re-sending ----------------------------------------------------



# -- turn 1: purchase orders -------------------------------------------------------------------

def working_days_after(day: str, n: int, closed: set[str]) -> str:
    """The date `n` working days after `day` (Saturdays, Sundays and company holidays skipped)."""
    d = dt.date.fromisoformat(day)
    while n > 0:
        d += dt.timedelta(days=1)
        if d.weekday() < 5 and d.isoformat() not in closed:
            n -= 1
    return d.isoformat()


def order_quantity(wanted: float, moq: float, multiple: float) -> float:
    """PUR-2.2: at least the MOQ, then up to a whole order multiple."""
    q = max(wanted, moq or 0.0)
    if multiple and multiple > 0:
        q = math.ceil(q / multiple - 1e-9) * multiple
    return q


def place_orders(client: ErpClient) -> None:
    """PUR-1.1 to PUR-3.2 for every approved requisition line not yet on a purchase order."""
    today = client.whoami()["business_date"]
    closed = {c["day"] for c in client.list_all("/calendar") if c.get("day")}
    vendors = {v["id"]: v for v in client.list_all("/vendors")}
    items: dict[str, dict[str, Any]] = {}
    # (vendor, item) -> the requisition lines it orders
    wanted: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for req in client.list_all("/requisitions", status="approved"):
        full = client.get(f"/requisitions/{req['id']}")
        for line in full["lines"]:
            if line.get("po_id") or not line.get("item_id"):
                continue
            item = items.setdefault(line["item_id"], client.get(f"/items/{line['item_id']}"))
            vendor = line.get("vendor_id") or item["preferred_vendor"]
            if vendors[vendor].get("quality_hold"):
                vendor = item["preferred_vendor"]  # PUR-1.2
            wanted.setdefault((vendor, line["item_id"]), []).append(
                {**line, "requester": full["requester"], "req_need_by": line.get("need_by") or full.get("need_by")})

    by_vendor: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
    for (vendor, item_id), lines in sorted(wanted.items()):
        by_vendor.setdefault(vendor, []).append((item_id, lines))

    for vendor in sorted(by_vendor, key=lambda v: vendors[v]["name"], reverse=True):
        po = open_draft(client, vendor)
        late: dict[str, list[str]] = {}   # requester -> what moved
        for item_id, lines in by_vendor[vendor]:
            item = items[item_id]
            lines.sort(key=lambda x: (x["requisition_id"], x["line_no"]))
            qty = order_quantity(sum(x["qty"] for x in lines), item.get("moq") or 0, item.get("order_multiple") or 0)
            asked = min((x["req_need_by"] for x in lines if x["req_need_by"]), default=None)
            feasible = working_days_after(today, int(item.get("lead_time_days") or 0), closed)
            need_by = asked
            if asked is None or asked < feasible:
                need_by = feasible
                if asked is not None:
                    for x in lines:
                        if x["req_need_by"] and x["req_need_by"] < feasible:
                            late.setdefault(x["requester"], []).append(
                                f"{item_id} ({x['requisition_id']} line {x['line_no']}): needed by "
                                f"{x['req_need_by']}, earliest possible {feasible} "
                                f"({item.get('lead_time_days')} working days lead time)")
            first, rest = lines[0], lines[1:]
            body: dict[str, Any] = {"item_id": item_id, "qty": qty, "need_by": need_by,
                                    "requisition_id": first["requisition_id"], "requisition_line": first["line_no"]}
            if rest:
                body["consolidates"] = [{"requisition_id": x["requisition_id"], "requisition_line": x["line_no"]} for x in rest]
            add_line(client, po, body)
        send_order(client, po)
        for requester, what in sorted(late.items()):
            flag_at_risk(client, po, requester, what)


def _my_drafts(client: ErpClient, vendor: str) -> list[dict[str, Any]]:
    return [p for p in client.list_all("/purchase-orders", vendor_id=vendor, buyer=ME)
            if p["status"] == "draft"]


def open_draft(client: ErpClient, vendor: str) -> str:
    """An empty draft order for `vendor` into the main warehouse (an existing draft of mine is
    reused, so a create whose answer was lost is not made twice)."""
    mine = _my_drafts(client, vendor)
    if mine:
        return str(mine[0]["id"])
    body = {"vendor_id": vendor, "warehouse_id": MAIN_WAREHOUSE, "lines": [],
            "note": "Weekly order from approved requisitions (Riley Park, covering purchasing)."}
    made = checked_write(lambda: client.post("/purchase-orders", body),
                         lambda: next(iter(_my_drafts(client, vendor)), None))
    return str(made["id"])


def add_line(client: ErpClient, po_id: str, body: dict[str, Any]) -> None:
    """Add one line to a draft, unless a line for the item is already there."""
    def on_order() -> Any:
        return next((ln for ln in client.get(f"/purchase-orders/{po_id}")["lines"]
                     if ln["item_id"] == body["item_id"] and ln.get("status") != "cancelled"), None)
    if on_order():
        return
    checked_write(lambda: client.post(f"/purchase-orders/{po_id}/lines", body), on_order)


def send_order(client: ErpClient, po_id: str) -> None:
    """Send the order to its vendor today (PUR-1.1)."""
    def sent() -> Any:
        po = client.get(f"/purchase-orders/{po_id}")
        return po if po.get("sent_on") else None
    if sent():
        return
    checked_write(lambda: client.post(f"/purchase-orders/{po_id}/send"), sent)


def flag_at_risk(client: ErpClient, po_id: str, requester: str, what: list[str]) -> None:
    """PUR-3.2: escalate the order to the requester with reason lead_time."""
    def raised() -> Any:
        return next((e for e in client.list_all("/escalations", record_id=po_id, reason="lead_time")
                     if e.get("to_user", e.get("to")) == requester), None)
    if raised():
        return
    note = ("Lead-time risk on " + po_id + ": the requested date cannot be met, so the order line "
            "carries the earliest date the vendor can deliver. " + "; ".join(what) + ".")
    body = {"record_type": "purchase_order", "record_id": po_id, "to": requester,
            "reason": "lead_time", "note": note}
    checked_write(lambda: client.post("/escalations", body), raised)


# -- turn 2: receiving ------------------------------------------------------------------------

def handbook_text(workspace: Path) -> str:
    """The whole handbook in the workspace, as one text."""
    return "\n\n".join(f.read_text(encoding="utf-8") for f in sorted((workspace / "handbook").glob("*.md")))


def clause(text: str, cid: str) -> str:
    """The paragraph of clause `cid`."""
    m = re.search(r"\*\*" + re.escape(cid) + r"\*\*(.*?)(?:\n\n|$)", text, re.S)
    if not m:
        raise RuntimeError(f"the handbook has no clause {cid}")
    return m.group(1)


def handbook_figure(text: str, pattern: str) -> str:
    """The figure `pattern` (one group) finds in a clause's text."""
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError(f"the clause does not say {pattern!r}")
    return m.group(1)


SLIP_LINE = re.compile(r"^Line\s+\d+:\s+(\S+)\s+qty\s+([\d.,]+)(?:\s+\(substitute for (\S+)\))?(.*)$", re.M)
LOT = re.compile(r"lot\s+(\S+)\s+exp\s+(\d{4}-\d{2}-\d{2})\s+qty\s+([\d.,]+)")


def read_slip(body: str) -> dict[str, Any]:
    """A packing slip as a clerk reads it: its number, the order, and what came on each line."""
    number = re.search(r"Packing slip\s+(\S+)", body)
    po = re.search(r"Your order\s+(\S+)", body)
    lines = []
    for sent, qty, instead_of, rest in SLIP_LINE.findall(body):
        lots = [{"lot": lot, "expiry": exp, "qty": float(q.replace(",", ""))} for lot, exp, q in LOT.findall(rest)]
        lines.append({"sent": sent, "qty": float(qty.replace(",", "")), "for": instead_of or sent, "lots": lots})
    return {"slip": number.group(1) if number else None, "po": po.group(1) if po else None, "lines": lines}


def receive_slips(client: ErpClient, workspace: Path) -> None:
    """RCV-1.1 to RCV-1.4 for every packing slip in the receiving inbox."""
    rules = handbook_text(workspace)
    over_pct = float(handbook_figure(clause(rules, "RCV-1.2"), r"([\d.]+)\s*%"))
    min_days = int(handbook_figure(clause(rules, "RCV-1.3"), r"(\d+)\s*days"))
    today = client.whoami()["business_date"]
    for msg in sorted(client.inbox("receiving"), key=lambda m: m["id"], reverse=True):
        if msg.get("disposition"):
            continue
        slip = read_slip(client.read_message(msg["id"])["body"])
        if not slip["po"] or not slip["lines"]:
            continue
        po = client.get(f"/purchase-orders/{slip['po']}")
        for sl in slip["lines"]:
            line = next((ln for ln in po["lines"] if ln["item_id"] == sl["for"]), None)
            if line is None:
                continue
            post_receipt(client, po["id"], slip["slip"], line["line_no"],
                         receipt_lines(client, line, sl, today, over_pct, min_days))
        dispose(client, msg["id"], "processed", po["id"], "Received against " + po["id"] + ".")


def receipt_lines(client: ErpClient, line: dict[str, Any], sl: dict[str, Any], today: str,
                  over_pct: float, min_days: int) -> list[dict[str, Any]]:
    """The receipt lines for one packing-slip line: per lot where the item is lot-controlled."""
    n = line["line_no"]
    if sl["sent"] != line["item_id"]:
        subs = {s["substitute_id"] for s in client.get(f"/items/{line['item_id']}").get("substitutes", [])}
        if sl["sent"] not in subs:  # RCV-1.4: not approved, the whole quantity goes back
            return [{"po_line": n, "qty_received": 0, "qty_refused": sl["qty"], "refusal_reason": "wrong_item"}]
    sub = {"item_id": sl["sent"]} if sl["sent"] != line["item_id"] else {}
    parts = sl["lots"] or [{"lot": None, "expiry": None, "qty": sl["qty"]}]
    out: list[dict[str, Any]] = []
    good: list[dict[str, Any]] = []
    limit = dt.date.fromisoformat(today) + dt.timedelta(days=min_days)
    for p in parts:
        lot = {"lot_no": p["lot"], "expiry": p["expiry"]} if p["lot"] else {}
        if p["expiry"] and dt.date.fromisoformat(p["expiry"]) < limit:  # RCV-1.3
            out.append({"po_line": n, **sub, **lot, "qty_received": 0, "qty_refused": p["qty"],
                        "refusal_reason": "short_dated"})
        else:
            good.append({"po_line": n, **sub, **lot, "qty_received": p["qty"], "qty_refused": 0})
    open_qty = float(line["qty"]) - float(line.get("qty_received") or 0)
    arrived = sum(g["qty_received"] for g in good)
    if arrived > open_qty * (1 + over_pct / 100) + 1e-9:  # RCV-1.2: keep what was ordered
        excess = arrived - open_qty
        for g in reversed(good):
            take = min(excess, g["qty_received"])
            g["qty_received"] -= take
            g["qty_refused"] = take
            g["refusal_reason"] = "over_shipment"
            excess -= take
            if excess <= 1e-9:
                break
    return out + good


def post_receipt(client: ErpClient, po_id: str, slip: str | None, po_line: int, lines: list[dict[str, Any]]) -> None:
    """One receipt per packing-slip line (a split delivery in the ERP), checked before re-sending."""
    def posted() -> Any:
        for r in client.list_all("/receipts", po_id=po_id):
            if r.get("status") != "posted" or r.get("packing_slip") != slip:
                continue
            if any(ln["po_line"] == po_line for ln in client.get(f"/receipts/{r['id']}")["lines"]):
                return r
        return None
    if posted():
        return
    body = {"po_id": po_id, "warehouse_id": MAIN_WAREHOUSE, "packing_slip": slip, "lines": lines,
            "note": f"Packing slip {slip}, PO line {po_line}."}
    checked_write(lambda: client.post("/receipts", body), posted)


def dispose(client: ErpClient, msg_id: str, disposition: str, ref: str | None, note: str) -> None:
    """Record what became of a message (the same disposition twice changes nothing)."""
    body = {"disposition": disposition, "ref": ref, "note": note}
    checked_write(lambda: client.post(f"/inbox/{msg_id}/disposition", body),
                  lambda: client.read_message(msg_id).get("disposition") == disposition)


# -- turn 3: invoices -------------------------------------------------------------------------

INVOICE_LINE = re.compile(r"^Line\s+\d+:\s+(\S+)\s+qty\s+([\d.,]+)\s+@\s+([\d.,]+)\s+=\s+([\d.,]+)", re.M)


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def read_invoice(body: str) -> dict[str, Any]:
    """A vendor invoice as billed: number, vendor, date, order, item lines and freight."""
    def field(pattern: str) -> str | None:
        m = re.search(pattern, body)
        return m.group(1) if m else None
    freight = field(r"Freight:?\s+([\d.,]+)")
    return {"no": field(r"INVOICE\s+(\S+)"), "vendor": field(r"From vendor\s+(\S+)"),
            "date": field(r"Invoice date\s+(\d{4}-\d{2}-\d{2})"), "po": field(r"Your PO\s+(\S+)"),
            "lines": [{"item": i, "qty": _num(q), "price": _num(p), "amount": _num(a)}
                      for i, q, p, a in INVOICE_LINE.findall(body)],
            "freight": _num(freight) if freight else 0.0}


def same_number(a: str, b: str) -> bool:
    """AP-1.3: invoice numbers compared without dashes, spaces and slashes."""
    def strip(x: str) -> str:
        return re.sub(r"[-\s/]", "", x).upper()
    return strip(a) == strip(b)


def shipped_instead(client: ErpClient) -> dict[tuple[str, str], str]:
    """(order, item sent) -> item ordered, from this week's packing slips: what a vendor sent in
    place of an ordered item is billed under its own code against the ordered line."""
    out: dict[tuple[str, str], str] = {}
    for msg in client.inbox("receiving"):
        slip = read_slip(client.read_message(msg["id"])["body"])
        for sl in slip["lines"]:
            if slip["po"] and sl["sent"] != sl["for"]:
                out[(slip["po"], sl["sent"])] = sl["for"]
    return out


def enter_and_match(client: ErpClient, workspace: Path) -> None:
    """AP-1.1 to AP-3.1 for every invoice in the AP inbox, oldest first, then the handoff."""
    instead = shipped_instead(client)
    held: list[str] = []
    for msg in sorted(client.inbox("ap"), key=lambda m: (m.get("received_on") or "", m["id"])):
        if msg.get("disposition"):
            continue
        inv = read_invoice(client.read_message(msg["id"])["body"])
        if not inv["no"] or not inv["vendor"]:
            continue
        entered = client.list_all("/ap-invoices", vendor=inv["vendor"])
        twin = next((e for e in entered if same_number(e["invoice_no"], inv["no"])), None)
        if twin is not None and twin.get("source_ref") != msg["id"]:
            dispose(client, msg["id"], "duplicate", twin["id"],
                    f"Same document as {twin['invoice_no']} ({twin['id']}), already entered; not entered again.")
            continue
        invoice = twin or enter_invoice(client, msg["id"], inv, instead)
        reason = match_or_hold(client, invoice["id"], inv)
        if reason:
            held.append(reason)
        dispose(client, msg["id"], "processed", invoice["id"], f"Entered as {invoice['id']}.")
    write_handoff(workspace, held)


def enter_invoice(client: ErpClient, msg_id: str, inv: dict[str, Any], instead: dict[tuple[str, str], str]) -> dict[str, Any]:
    """AP-1.1, AP-1.2: the invoice exactly as billed, each item line on the PO line it bills."""
    po = client.get(f"/purchase-orders/{inv['po']}") if inv["po"] else {"lines": []}
    lines: list[dict[str, Any]] = []
    for ln in inv["lines"]:
        ordered = instead.get((inv["po"], ln["item"]), ln["item"])
        po_line = next((p["line_no"] for p in po["lines"] if p["item_id"] == ordered), None)
        # The PO line, quantity, price and amount as billed; the item is the PO line's.
        lines.append({"kind": "item", "po_line": po_line, "description": f"{ln['item']} as billed",
                      "qty": ln["qty"], "unit_price": ln["price"], "amount": ln["amount"]})
    if inv["freight"]:
        lines.append({"kind": "freight", "description": "Freight", "amount": inv["freight"]})
    body = {"vendor": inv["vendor"], "invoice_no": inv["no"], "invoice_date": inv["date"], "po": inv["po"],
            "source_ref": msg_id, "lines": lines}

    def recorded() -> Any:
        return next((e for e in client.list_all("/ap-invoices", vendor=inv["vendor"])
                     if e["invoice_no"] == inv["no"]), None)
    return checked_write(lambda: client.post("/ap-invoices", body), recorded)


def match_or_hold(client: ErpClient, invoice_id: str, inv: dict[str, Any]) -> str | None:
    """AP-2.1 to AP-2.3: validate an invoice whose item lines all match its order and receipts,
    else hold it per mismatched line; returns the handoff sentence of a held invoice."""
    detail = client.get(f"/ap-invoices/{invoice_id}")
    if detail["status"] not in ("entered", "on_hold"):
        return None
    problems: list[tuple[str, int, str]] = []
    billed = {ln["line_no"]: ln for ln in detail["lines"]}
    for m in detail["match"]["lines"]:
        desc = billed.get(m["line_no"], {}).get("description") or f"PO line {m['po_line']}"
        code = desc.split()[0]
        if abs(float(m["billed_price"]) - float(m["po_price"])) > 0.00001:
            problems.append(("price", m["line_no"],
                             f"line {m['line_no']} ({code}) is billed at {m['billed_price']:.2f} a unit "
                             f"against {m['po_price']:.2f} on the order"))
        still_open = float(m["received"]) - float(m.get("previously_invoiced") or 0)
        if float(m["billed_qty"]) > still_open + 1e-9:
            problems.append(("quantity", m["line_no"],
                             f"line {m['line_no']} ({code}) bills {m['billed_qty']:g} but "
                             + (f"only {still_open:g} were received" if still_open > 0
                                else "nothing was received against it")))
    if not problems:
        def validated() -> Any:
            return client.get(f"/ap-invoices/{invoice_id}")["status"] not in ("entered",)
        checked_write(lambda: client.post(f"/ap-invoices/{invoice_id}/validate"), validated)
        return None
    for reason, line_no, why in problems:
        def placed(reason: str = reason, line_no: int = line_no) -> Any:
            return next((h for h in client.get(f"/ap-invoices/{invoice_id}").get("holds", [])
                         if h.get("reason") == reason and h.get("line_no") == line_no
                         and h.get("status", "active") == "active"), None)
        if placed():
            continue
        place_hold(client, invoice_id, {"reason": reason, "line_no": line_no, "note": why[0].upper() + why[1:] + "."},
                   placed)
    vendor = client.get(f"/vendors/{inv['vendor']}")["name"]
    reasons = sorted({r for r, _, _ in problems})
    return (f"{vendor} invoice {inv['no']} is held for {' and '.join(reasons)}: "
            + "; ".join(w for _, _, w in problems) + ".")


def place_hold(client: ErpClient, invoice_id: str, body: dict[str, Any], placed: Callable[[], Any]) -> None:
    """AP-2.2, AP-2.3: one hold, checked before re-sending."""
    checked_write(lambda: client.post(f"/ap-invoices/{invoice_id}/holds", body), placed)


def write_handoff(workspace: Path, held: list[str]) -> None:
    """AP-3.1: one sentence per held invoice."""
    text = "# Handoff\n\n" + ("\n".join(f"- {h}" for h in held) if held else "No invoice is on hold.") + "\n"
    (workspace / "handoff.md").write_text(text, encoding="utf-8")


# -- the policy --------------------------------------------------------------------------------

def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Play one turn of the week."""
    if turn == 1:
        place_orders(client)
    elif turn == 2:
        receive_slips(client, workspace)
    elif turn == 3:
        enter_and_match(client, workspace)


POLICIES = {"alt": alt}
