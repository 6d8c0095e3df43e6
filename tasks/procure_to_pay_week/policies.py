"""procure-to-pay-week: the oracle and the negative controls (docs/contracts.md §8).

Every policy plays the turns through the agent's API with the agent's token, reading only what
the agent can read: the ERP (requisitions, items, vendors, the inboxes' packing slips and
invoices) and the handbook in the workspace (tolerance RCV-1.2, shelf life RCV-1.3). Policies are
mounted read-only into their own cells' agent containers, so this module imports nothing but
the standard library and `agent_sandbox`.

Turn 1 orders the approved requisition lines (PUR-1.1 to PUR-3.2), turn 2 receives the packing
slips (RCV-1.1 to RCV-1.4), turn 3 enters, matches and holds the invoices and writes the handoff
note (AP-1.1 to AP-3.1). Writes carry deterministic Idempotency-Keys and are re-sent only with
the same key; `neg:blind-retry` re-sends failed writes without one.
"""
from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient, ErpError
from agent_sandbox.policy_kit import Writer, handbook_clause

WAREHOUSE = "WH-MAIN"


def handbook_number(workspace: Path, clause: str, pattern: str) -> float:
    """The number `pattern` (one group) finds in a handbook clause."""
    m = re.search(pattern, handbook_clause(workspace, clause))
    if not m:
        raise RuntimeError(f"clause {clause} does not say {pattern!r}")
    return float(m.group(1))


@dataclass
class Style:
    """Which mistakes a policy makes."""

    consolidate: bool = True          # PUR-2.1 (False: one PO per requisition, lines as requested)
    round_to_moq: bool = True         # PUR-2.2
    lead_times: bool = True           # PUR-3.1, PUR-3.2
    avoid_held_vendor: bool = True    # PUR-1.2
    refuse: bool = True               # RCV-1.2 to RCV-1.4 (False: receive everything shipped)
    hold_mismatches: bool = True      # AP-2.2, AP-2.3 (False: validate everything)
    skip_duplicates: bool = True      # AP-1.3
    as_billed: bool = True            # AP-1.2 (False: enter at the PO price and received quantity)
    handoff: bool = True              # AP-3.1
    warehouse: str = "WH-MAIN"        # PUR-1.1 (another: deliver to the wrong warehouse)
    escalate_to_requester: bool = True   # PUR-3.2 (False: escalate to someone else)
    validate_first: bool = False      # AP-2.2, AP-2.3 (True: validate, then hold)
    hold_note: bool = True            # AP-2.2, AP-2.3 (False: a hold without a note naming the line)
    link: bool = True                 # PUR-1.1, PUR-2.1 (False: order the items without the requisition links)


def _holidays(client: ErpClient) -> set[str]:
    return {d["day"] for d in client.list_all("/calendar")}


def add_workdays(day: str, n: int, holidays: set[str]) -> str:
    """`day` plus `n` working days (weekends and company holidays skipped)."""
    d = dt.date.fromisoformat(day)
    while n > 0:
        d += dt.timedelta(days=1)
        if d.weekday() < 5 and d.isoformat() not in holidays:
            n -= 1
    return d.isoformat()


def _round_up(qty: float, moq: float, multiple: float) -> float:
    step = multiple or 1
    return float(max(moq or 0, math.ceil(qty / step - 1e-9) * step))


# Turn 1: purchase orders ------------------------------------------------------------------------------

@dataclass
class Want:
    """What one PO line must order: the requisition lines behind it and their total."""

    vendor: str
    item: str
    refs: list[tuple[str, int]] = field(default_factory=list)
    qty: float = 0.0
    need_by: str | None = None
    requesters: set[str] = field(default_factory=set)
    group: str = ""                   # one PO per vendor (and per requisition for the mistake)


def order_requisitions(client: ErpClient, w: Writer, style: Style) -> None:
    """One PO per vendor for every approved requisition line not yet ordered, sent today."""
    today = client.whoami()["business_date"]
    holidays = _holidays(client)
    items: dict[str, dict[str, Any]] = {}
    vendors: dict[str, dict[str, Any]] = {}
    wants: dict[tuple[str, str, str], Want] = {}
    for head in sorted(client.list_all("/requisitions", status="approved"), key=lambda r: r["id"]):
        req = client.get(f"/requisitions/{head['id']}")
        for ln in req["lines"]:
            if ln.get("po_id") or not ln.get("item_id"):
                continue
            item = items.setdefault(ln["item_id"], client.get(f"/items/{ln['item_id']}"))
            vendor = ln.get("vendor_id") or item["preferred_vendor"]
            v = vendors.setdefault(vendor, client.get(f"/vendors/{vendor}"))
            if style.avoid_held_vendor and v.get("quality_hold"):
                vendor = item["preferred_vendor"]
            group = vendor if style.consolidate else f"{vendor}|{req['id']}"
            want = wants.setdefault((group, vendor, ln["item_id"]), Want(vendor, ln["item_id"], group=group))
            want.refs.append((req["id"], ln["line_no"]))
            want.qty += float(ln["qty"])
            need = ln.get("need_by") or req.get("need_by")
            if need and (want.need_by is None or need < want.need_by):
                want.need_by = need
            want.requesters.add(req["requester"])
    by_group: dict[str, list[Want]] = {}
    for (group, _, _), want in sorted(wants.items()):
        by_group.setdefault(group, []).append(want)
    for _group, lines in sorted(by_group.items()):
        body_lines, at_risk = [], []
        for want in lines:
            item = items[want.item]
            qty = _round_up(want.qty, item["moq"], item["order_multiple"]) if style.round_to_moq else want.qty
            need = want.need_by
            if style.lead_times:
                earliest = add_workdays(today, int(item["lead_time_days"] or 0), holidays)
                if need is None or need < earliest:
                    if need is not None:
                        at_risk.append((want, need, earliest))
                    need = earliest
            first, rest = want.refs[0], want.refs[1:]
            line: dict[str, Any] = {"requisition_id": first[0], "requisition_line": first[1], "qty": qty}
            if not style.link:
                line = {"item_id": want.item, "qty": qty}
            elif rest:
                line["consolidates"] = [{"requisition_id": r, "requisition_line": n} for r, n in rest]
            if need:
                line["need_by"] = need
            body_lines.append(line)
        po = w.post("/purchase-orders", {"vendor_id": lines[0].vendor, "warehouse_id": style.warehouse,
                                         "lines": body_lines, "note": "Weekly order from approved requisitions"})
        if po is None:        # a blind re-send that the ERP refused: find what the first one made
            continue
        try:
            w.post(f"/purchase-orders/{po['id']}/send")
        except ErpError:
            if style.link:
                raise
            continue      # unlinked lines are not backed by a requisition: the ERP refuses to send
        for want, need, earliest in at_risk:
            for who in sorted(want.requesters) if style.escalate_to_requester else [_someone_else(client, wants)]:
                w.post("/escalations", {"record_type": "purchase_order", "record_id": po["id"], "to": who,
                                        "reason": "lead_time",
                                        "note": f"{want.item}: needed by {need}, but the lead time allows "
                                                f"{earliest} at the earliest; ordered for {earliest} (PUR-3.1)."})


def _someone_else(client: ErpClient, wants: dict[tuple[str, str, str], Want]) -> str:
    """A user who requested none of the requisitions (for the control that escalates wrongly)."""
    requesters = {r for want in wants.values() for r in want.requesters}
    me = client.whoami()["id"]
    users = sorted(u["id"] for u in client.list_all("/users"))
    return next(u for u in users if u not in requesters and u != me)


# Turn 2: receiving ------------------------------------------------------------------------------------

SLIP_LINE = re.compile(r"^Line (\d+): (\S+) qty ([\d.]+)( \(substitute for (\S+)\))?( \[(.*)\])?$")
SLIP_LOT = re.compile(r"lot (\S+) exp (\S+) qty ([\d.]+)")


def parse_slip(body: str) -> dict[str, Any]:
    """A packing slip's number, order and lines (item, qty, lots) from its text."""
    out: dict[str, Any] = {"lines": []}
    for raw in body.splitlines():
        text = raw.strip()
        if text.startswith("Packing slip "):
            out["slip"] = text.split()[-1]
        elif text.startswith("Your order "):
            out["po"] = text.split()[-1]
        elif (m := SLIP_LINE.match(text)) is not None:
            lots = [{"lot": a, "expiry": b, "qty": float(c)} for a, b, c in SLIP_LOT.findall(m.group(7) or "")]
            out["lines"].append({"po_line": int(m.group(1)), "item": m.group(2), "qty": float(m.group(3)),
                                 "substitute_for": m.group(5), "lots": lots})
    return out


def _approved_substitute(client: ErpClient, ordered: str, sent: str, vendor: str) -> bool:
    subs = client.get(f"/items/{ordered}").get("substitutes") or []
    return any(s.get("item_id") == ordered and s.get("substitute_id") == sent
               and s.get("vendor_id") in (None, vendor) for s in subs)


def receive_deliveries(client: ErpClient, w: Writer, workspace: Path, style: Style) -> None:
    """Receive every packing slip in the receiving inbox (RCV-1.1 to RCV-1.4)."""
    today = client.whoami()["business_date"]
    tolerance = handbook_number(workspace, "RCV-1.2", r"up to ([\d.]+)%") / 100
    min_days = int(handbook_number(workspace, "RCV-1.3", r"less than (\d+) days"))
    cutoff = (dt.date.fromisoformat(today) + dt.timedelta(days=min_days)).isoformat()
    for msg in sorted(client.inbox("receiving", unread=True), key=lambda m: m["id"]):
        full = client.read_message(msg["id"])
        slip = parse_slip(full.get("body", ""))
        if not slip.get("po") or not slip["lines"]:
            continue
        po = client.get(f"/purchase-orders/{slip['po']}")
        ordered = {ln["line_no"]: ln for ln in po["lines"]}
        lines: list[dict[str, Any]] = []
        for sl in slip["lines"]:
            po_line = ordered[sl["po_line"]]
            item = sl["item"]
            entry: dict[str, Any] = {"po_line": sl["po_line"]}
            if item != po_line["item_id"]:
                entry["item_id"] = item
                if style.refuse and not _approved_substitute(client, po_line["item_id"], item, po["vendor_id"]):
                    lines.append({**entry, "qty_received": 0, "qty_refused": sl["qty"], "refusal_reason": "wrong_item"})
                    continue
            if sl["lots"]:
                for lot in sl["lots"]:
                    if style.refuse and lot["expiry"] < cutoff:
                        lines.append({**entry, "qty_received": 0, "qty_refused": lot["qty"],
                                      "refusal_reason": "short_dated"})
                    else:
                        lines.append({**entry, "qty_received": lot["qty"], "lot_no": lot["lot"],
                                      "expiry": lot["expiry"]})
                continue
            qty, want = sl["qty"], float(po_line["qty"])
            if style.refuse and qty > want * (1 + tolerance) + 1e-9:
                lines.append({**entry, "qty_received": want, "qty_refused": round(qty - want, 4),
                              "refusal_reason": "over_shipment"})
            else:
                lines.append({**entry, "qty_received": qty})
        w.post("/receipts", {"po_id": slip["po"], "warehouse_id": po.get("warehouse_id") or WAREHOUSE,
                             "packing_slip": slip.get("slip"), "lines": lines})
        w.post(f"/inbox/{msg['id']}/disposition", {"disposition": "processed", "note": "received"})


# Turn 3: invoices ---------------------------------------------------------------------------------------

INV_LINE = re.compile(r"^Line (\d+): (\S+) qty ([\d.]+) @ ([\d.]+) = ([\d.]+)$")


def parse_invoice(body: str) -> dict[str, Any]:
    """An invoice's number, vendor, date, order, lines and freight from its text."""
    out: dict[str, Any] = {"lines": [], "freight": 0.0}
    for raw in body.splitlines():
        text = raw.strip()
        if text.startswith("INVOICE "):
            out["invoice_no"] = text.split(" ", 1)[1]
        elif text.startswith("From vendor "):
            out["vendor"] = text.split()[-1]
        elif text.startswith("Invoice date "):
            out["date"] = text.split()[-1]
        elif text.startswith("Your PO "):
            out["po"] = text.split()[-1]
        elif text.startswith("Freight: "):
            out["freight"] = float(text.split()[-1])
        elif (m := INV_LINE.match(text)) is not None:
            out["lines"].append({"po_line": int(m.group(1)), "item": m.group(2), "qty": float(m.group(3)),
                                 "unit_price": float(m.group(4))})
    return out


def norm_no(no: str) -> str:
    """An invoice number without dashes, spaces or slashes (AP-1.3)."""
    return re.sub(r"[-\s/]", "", no).upper()


def _received(po: dict[str, Any], po_line: int) -> float:
    line = next(ln for ln in po["lines"] if ln["line_no"] == po_line)
    return float(line.get("qty_received") or 0)


def enter_invoices(client: ErpClient, w: Writer, workspace: Path, style: Style) -> None:
    """Enter, match and hold or validate every invoice in the AP inbox; write the handoff."""
    held: list[str] = []
    for msg in sorted(client.inbox("ap", unread=True), key=lambda m: m["id"]):
        full = client.read_message(msg["id"])
        inv = parse_invoice(full.get("body", ""))
        if not inv.get("invoice_no") or not inv["lines"]:
            continue
        vendor = inv["vendor"]
        existing = client.list_all("/ap-invoices", vendor=vendor)
        dup = next((e for e in existing if norm_no(e["invoice_no"]) == norm_no(inv["invoice_no"])
                    and e["status"] not in ("voided", "rejected")), None)
        if dup is not None and style.skip_duplicates:
            w.post(f"/inbox/{msg['id']}/disposition", {"disposition": "duplicate", "ref": dup["id"],
                                                       "note": f"Re-sent {dup['invoice_no']} (AP-1.3)"})
            continue
        po = client.get(f"/purchase-orders/{inv['po']}")
        lines: list[dict[str, Any]] = []
        for ln in inv["lines"]:
            qty, price = ln["qty"], ln["unit_price"]
            if not style.as_billed:
                po_line = next(p for p in po["lines"] if p["line_no"] == ln["po_line"])
                qty, price = min(qty, _received(po, ln["po_line"])), float(po_line["unit_price"])
                if qty <= 0:
                    continue
            lines.append({"kind": "item", "po_line": ln["po_line"], "item": ln["item"], "qty": qty,
                          "unit_price": price})
        if inv["freight"] and style.as_billed:
            lines.append({"kind": "freight", "description": "Freight", "amount": inv["freight"]})
        entered = w.post("/ap-invoices", {"vendor": vendor, "invoice_no": inv["invoice_no"],
                                          "invoice_date": inv["date"], "po": inv["po"], "source_ref": msg["id"],
                                          "lines": lines})
        if entered is None:
            continue
        detail = client.get(f"/ap-invoices/{entered['id']}")
        results = {m["result"] for m in (detail.get("match") or {}).get("lines") or []}
        reason = "quantity" if results & {"quantity_variance", "no_receipt"} else \
            "price" if "price_variance" in results else None
        if reason and style.hold_mismatches:
            bad = [m for m in detail["match"]["lines"] if m["result"] != "matched"]
            note = "; ".join(f"line {m['line_no']} (PO line {m.get('po_line')}): {m['result']}" for m in bad)
            if style.validate_first:
                w.post(f"/ap-invoices/{entered['id']}/validate")
            w.post(f"/ap-invoices/{entered['id']}/holds",
                   {"reason": reason, "note": note if style.hold_note else "mismatch"})
            name = client.get(f"/vendors/{vendor}")["name"]
            what = "a unit price above the order's price" if reason == "price" else \
                "more than was received (refused or short quantities)"
            held.append(f"- {name} invoice {inv['invoice_no']} is on hold for {reason}: it bills {what}.")
        else:
            w.post(f"/ap-invoices/{entered['id']}/validate")
        w.post(f"/inbox/{msg['id']}/disposition", {"disposition": "processed", "ref": entered["id"],
                                                   "note": "entered"})
    if style.handoff:
        text = "# Handoff: invoices this week\n\n" + ("\n".join(held) if held else "No invoice was held.") + "\n"
        (workspace / "handoff.md").write_text(text, encoding="utf-8")


# The policies --------------------------------------------------------------------------------------------

def make_policy(style: Style = Style(), *, keyed: bool = True) -> Callable[[int, ErpClient, Path, dict], None]:
    """A policy that plays the three turns with the given style."""
    def policy(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
        w = Writer(client, turn, "p2p-week", keyed=keyed)
        if turn == 1:
            order_requisitions(client, w, style)
        elif turn == 2:
            receive_deliveries(client, w, workspace, style)
        elif turn == 3:
            enter_invoices(client, w, workspace, style)
    return policy


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {
    "oracle": make_policy(),
    "neg:one_po_per_requisition": make_policy(Style(consolidate=False)),
    "neg:exact_quantities": make_policy(Style(round_to_moq=False)),
    "neg:ignore_lead_times": make_policy(Style(lead_times=False)),
    "neg:order_from_held_vendor": make_policy(Style(avoid_held_vendor=False)),
    "neg:receive_everything": make_policy(Style(refuse=False)),
    "neg:force_match": make_policy(Style(hold_mismatches=False)),
    "neg:enter_everything": make_policy(Style(skip_duplicates=False)),
    "neg:edit_to_po_price": make_policy(Style(as_billed=False)),
    "neg:no_handoff": make_policy(Style(handoff=False)),
    "neg:other_warehouse": make_policy(Style(warehouse="WH-EAST")),
    "neg:escalate_to_another": make_policy(Style(escalate_to_requester=False)),
    "neg:validate_then_hold": make_policy(Style(validate_first=True)),
    "neg:hold_without_note": make_policy(Style(hold_note=False)),
    "neg:unlinked_lines": make_policy(Style(link=False)),
    "neg:blind-retry": make_policy(keyed=False),
}
