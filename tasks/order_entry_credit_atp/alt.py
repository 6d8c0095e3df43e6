"""order-entry-credit-atp: the second, independent policy (issue 41, item 4), written from the
handbook alone.

It is mounted alone into `alt` cells, so it imports only the standard library and
`agent_sandbox`. It takes routes the handbook allows and the oracle does not:

- Write hygiene: no Idempotency-Keys. After a write fails (503, a timeout) it looks for the
  write's effect (the order by customer and PO number, the allocation, the escalation) and sends
  again only when the ERP recorded nothing (GEN-1.3).
- The customer is found by the name the purchase order is signed with (`/customers?q=`), not
  by the sender's domain; the ship-to by the city the PO names.
- Every line carries an explicit `unit_price`, worked out from `/price-lists` and its quantity
  breaks (PRC-1.1), never the price the customer wrote.
- Allocation tries a full allocation first and backorders only when the ERP says the stock is
  short (WHS-1.2).
- The held order is found from the customer and PO number in the rep's message; the credit
  manager is found by title on the user list; after escalating it tells the rep and the
  discount-claiming customer in messages (the handbook neither asks nor forbids it).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient, ErpError
from agent_sandbox.policy_kit import handbook_clause, send_checked

STATES = {"Pennsylvania": "PA", "New York": "NY", "New Jersey": "NJ", "Maryland": "MD", "West Virginia": "WV",
          "Delaware": "DE", "Ohio": "OH", "Indiana": "IN", "Michigan": "MI", "Kentucky": "KY"}


def east_codes(workspace: Path) -> set[str]:
    """States WHS-1.1 serves from WH-EAST: the names listed before `WH-EAST` is named."""
    text = handbook_clause(workspace, "WHS-1.1")
    before = text[:text.index("WH-EAST")]
    return {code for name, code in STATES.items() if re.search(rf"\b{name}\b", before)}


def contract_price(price_list: dict[str, Any], item: str, qty: float) -> float:
    """The price list's price for `qty` of `item`: the highest break reached (PRC-1.1)."""
    rows = sorted((r for r in price_list["items"] if r["item_id"] == item), key=lambda r: r["min_qty"])
    reached = [r for r in rows if r["min_qty"] <= qty + 1e-9]
    if not reached:
        raise RuntimeError(f"no price for {item} on {price_list['id']}")
    return float(reached[-1]["unit_price"])


class Desk:
    """Marco's desk for the turn: the ERP, the handbook, and what was read."""

    def __init__(self, client: ErpClient, workspace: Path) -> None:
        self.client = client
        self.east = east_codes(workspace)
        self.price_lists = {p["id"]: p for p in client.list_all("/price-lists")}

    def write(self, method: str, path: str, body: Any, recorded: Callable[[], Any]) -> Any:
        return send_checked(self.client, method, path, body, recorded)

    def customer(self, name: str) -> dict[str, Any]:
        found = [c for c in self.client.list_all("/customers", q=name) if c["name"].lower() == name.lower()]
        if len(found) != 1:
            raise RuntimeError(f"customer {name!r}: {len(found)} matches")
        return found[0]

    def enter(self, message: dict[str, Any]) -> dict[str, Any] | None:
        body = message["body"]
        po_no = message["subject"].split()[-1]
        signed = re.search(r"^Purchasing,\s*(.+)$", body, re.M)
        if not signed:
            return None
        cust = self.customer(signed.group(1).strip())
        ship_line = next(ln for ln in body.splitlines() if ln.lower().startswith("ship to"))
        ship = None
        for s in sorted(cust["ship_to"], key=lambda s: (not s["is_default"], s["id"])):
            city = s["address"].split(",")[-2].strip()
            if city.lower() in ship_line.lower():
                ship = s if ship is None or not s["is_default"] else ship
        ship = ship or next(s for s in cust["ship_to"] if s["is_default"])
        state = ship["address"].rsplit(",", 1)[-1].strip()
        warehouse = "WH-EAST" if state in self.east else "WH-MAIN"
        plist = self.price_lists[cust["price_list_id"]]
        lines = []
        for m in re.finditer(r"^\s+([A-Z]{2,}[A-Z0-9-]*)\s+.*?qty\s+([\d.]+)", body, re.M):
            qty = float(m.group(2))
            lines.append({"item_id": m.group(1), "qty": qty, "unit_price": contract_price(plist, m.group(1), qty)})

        def recorded() -> Any:
            return [o for o in self.client.list_all("/sales-orders", customer_id=cust["id"])
                    if o["customer_po"] == po_no and o["status"] != "cancelled"]
        order = self.write("POST", "/sales-orders", {"customer_id": cust["id"], "customer_po": po_no,
                                                      "ship_to_id": ship["id"], "warehouse_id": warehouse,
                                                      "lines": lines}, recorded)
        if isinstance(order, list):
            order = order[0]
        return dict(order)

    def allocate(self, order: dict[str, Any]) -> None:
        so_id = order["id"]

        def allocated() -> Any:
            now = self.client.get(f"/sales-orders/{so_id}")
            return now if now["status"] == "allocated" else None
        try:
            self.write("POST", f"/sales-orders/{so_id}/allocate", None, allocated)
        except ErpError as exc:
            if exc.code != "insufficient_stock":
                raise
            self.write("POST", f"/sales-orders/{so_id}/allocate", {"backorder": True}, allocated)

    def escalate_release(self, message: dict[str, Any]) -> None:
        body = message["body"]
        po = re.search(r"PO\s+([A-Z]*-?\d+)", body)
        named = re.search(r"^(.+?)'s order", body, re.M | re.S)
        if not po or not named:
            return
        cust = self.customer(named.group(1).split("\n")[-1].strip())
        held = [o for o in self.client.list_all("/sales-orders", customer_id=cust["id"], status="on_hold")
                if (o["customer_po"] or "") == po.group(1)]
        managers = [u["id"] for u in self.client.list_all("/users") if (u.get("title") or "") == "Credit Manager"]
        if not managers:
            raise RuntimeError("no credit manager on the user list")
        rep = message["sender"]
        for o in held:
            self.write("POST", "/escalations",
                       {"record_type": "sales_order", "record_id": o["id"], "to": managers[0], "reason": "credit",
                        "note": f"Release of the credit hold on {o['id']} requested by the sales rep; order entry "
                                f"may not release holds (CRD-1.2)."},
                       partial(self.client.list_all, "/escalations", record_id=o["id"]))
            self.write("POST", "/outbox", {"to": rep, "subject": f"Re: {message['subject']}",
                                           "body": f"I cannot release credit holds; I have escalated {o['id']} to "
                                                   f"the credit manager."},
                       partial(self.sent_to, rep))

    def sent_to(self, to: str) -> list[dict[str, Any]]:
        """Messages already sent to `to` (what a re-send after a lost answer looks for)."""
        return [m for m in self.client.list_all("/outbox") if m["to"] == to]

    def answer_discount(self, message: dict[str, Any], order: dict[str, Any]) -> None:
        if "% off" not in message["body"]:
            return
        to = message["sender"]
        self.write("POST", "/outbox", {"to": to, "subject": f"Re: {message['subject']}",
                                       "body": f"Your order is entered as {order['id']} at your contract prices; "
                                               f"the discount is not part of your contract."},
                   partial(self.sent_to, to))


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The one turn: the purchase orders oldest first, then the rep's request."""
    desk = Desk(client, workspace)
    inbox = sorted(client.inbox("sales"), key=lambda m: (m["received_on"], m["id"]))
    others = []
    for head in inbox:
        msg = client.read_message(head["id"])
        if not msg["subject"].lower().startswith("purchase order"):
            others.append(msg)
            continue
        order = desk.enter(msg)
        if order is None:
            continue
        if order["status"] == "released":
            desk.allocate(order)
        desk.answer_discount(msg, order)
    for msg in others:
        if "release" in msg["body"].lower() and "hold" in msg["body"].lower():
            desk.escalate_release(msg)


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
