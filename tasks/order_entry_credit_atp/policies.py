"""order-entry-credit-atp: the oracle and the negative controls (docs/contracts.md §8).

Every policy plays the turn through the agent's API with the agent's token, reading only the
ERP and the handbook in the workspace (the east states of WHS-1.1). Policies are mounted alone
into their own cells' agent containers, so this module imports nothing but the standard library
and `agent_sandbox`.

The oracle reads the sales inbox oldest first. Each purchase order becomes one sales order for
the customer whose e-mail domain sent it (ORD-1.1), to the ship-to the PO names (ORD-1.2), from
the warehouse its state calls for (WHS-1.1), without `unit_price` so the ERP fills the contract
price (PRC-1.1/1.2); a released order is allocated with backorder (WHS-1.2). A request to
release a hold is escalated to the credit manager (CRD-1.2). Writes carry deterministic
Idempotency-Keys; `neg:blind-retry` re-sends failed writes without one.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import Writer, handbook_clause, probe_write

STATE_CODES = {"pennsylvania": "PA", "new york": "NY", "new jersey": "NJ", "maryland": "MD",
               "west virginia": "WV", "ohio": "OH", "indiana": "IN", "michigan": "MI", "kentucky": "KY"}
LINE = re.compile(r"^\s+([A-Z][A-Z0-9-]+)\s+.*?\bqty\s+(\d+(?:\.\d+)?)\s+unit price \$([\d,]+\.\d\d)", re.M)


def east_states(workspace: Path) -> set[str]:
    """The state codes WHS-1.1 sends to the East distribution center."""
    text = handbook_clause(workspace, "WHS-1.1").lower()
    head = text.split("ship from the east")[0]
    return {code for name, code in STATE_CODES.items() if name in head}


def state_of(address: str) -> str:
    """The two-letter state at the end of an address."""
    return address.rsplit(",", 1)[-1].strip().upper()


@dataclass
class PurchaseOrder:
    """A customer purchase order read from a message."""

    message: str
    po: str
    sender: str
    ship_line: str
    lines: list[tuple[str, float, float]]           # item, qty, the customer's price


def read_purchase_orders(client: ErpClient) -> tuple[list[PurchaseOrder], list[dict[str, Any]]]:
    """The purchase orders of the sales inbox, oldest first, and the other messages."""
    msgs = sorted(client.inbox("sales"), key=lambda m: (m["received_on"], m["id"]))
    pos, other = [], []
    for m in msgs:
        full = client.read_message(m["id"])
        subject = full.get("subject") or ""
        if subject.lower().startswith("purchase order "):
            body = full.get("body") or ""
            ship = next((ln.split(":", 1)[1].strip() for ln in body.splitlines() if ln.lower().startswith("ship to:")), "")
            lines = [(i, float(q), float(p.replace(",", ""))) for i, q, p in LINE.findall(body)]
            pos.append(PurchaseOrder(m["id"], subject.split()[-1], full.get("sender") or "", ship, lines))
        else:
            other.append(full)
    return pos, other


@dataclass
class Style:
    """Which mistakes a policy makes."""

    discount_prices: bool = False      # enter the customer's PO prices
    one_warehouse: bool = False        # everything from WH-MAIN
    default_ship_to: bool = False      # ignore a branch ship-to
    backorder: bool = True             # False: leave a short order released, unallocated
    cover_from_main: bool = False      # send an order the East center cannot fill from WH-MAIN
    fit_credit: bool = False           # cut an order to the customer's available credit
    skip_held: bool = False            # do not enter an order that would go on credit hold
    escalate: bool = True              # False: try to release the hold instead


def _customer_for(po: PurchaseOrder, customers: list[dict[str, Any]]) -> dict[str, Any]:
    domain = po.sender.rsplit("@", 1)[-1].strip(">").lower()
    for c in customers:
        if (c.get("email") or "").lower().endswith("@" + domain):
            return c
    raise RuntimeError(f"no customer for {po.sender}")


def _ship_to(po: PurchaseOrder, cust: dict[str, Any], style: Style) -> dict[str, Any]:
    default = next((s for s in cust["ship_to"] if s["is_default"]), cust["ship_to"][0])
    if style.default_ship_to:
        return default
    for s in cust["ship_to"]:
        if s["address"].lower() in po.ship_line.lower():
            return s
    return default


def _free(client: ErpClient, item: str, warehouse: str) -> float:
    rows = client.list_all("/inventory/on-hand", item_id=item, warehouse_id=warehouse)
    return sum(float(r["qty"]) for r in rows)


def enter_orders(client: ErpClient, w: Writer, workspace: Path, style: Style) -> None:
    """Enter the inbox's purchase orders and answer the request to release a hold."""
    east = east_states(workspace)
    pos, other = read_purchase_orders(client)
    customers = client.list_all("/customers")
    for po in pos:
        cust = _customer_for(po, customers)
        ship = _ship_to(po, cust, style)
        wh = "WH-EAST" if state_of(ship["address"]) in east and not style.one_warehouse else "WH-MAIN"
        if style.cover_from_main and wh == "WH-EAST" and any(q > _free(client, i, wh) for i, q, _ in po.lines):
            wh = "WH-MAIN"
        lines: list[dict[str, Any]] = []
        for item, qty, price in po.lines:
            line: dict[str, Any] = {"item_id": item, "qty": qty}
            if style.discount_prices:
                line["unit_price"] = price
            lines.append(line)
        if style.skip_held or style.fit_credit:
            total = sum(q * p for _, q, p in po.lines)
            room = float(client.get(f"/customers/{cust['id']}")["available_credit"])
            if total > room:
                if style.skip_held:
                    continue
                scale = max(room, 0.0) / total
                lines = [{**ln, "qty": max(int(ln["qty"] * scale), 1)} for ln in lines]
        so = w.post("/sales-orders", {"customer_id": cust["id"], "customer_po": po.po, "ship_to_id": ship["id"],
                                      "warehouse_id": wh, "lines": lines})
        if so is None:                        # a blind re-send that found the first one through
            continue
        if so["status"] == "released":
            if style.backorder:
                w.post(f"/sales-orders/{so['id']}/allocate", {"backorder": True})
            else:
                probe_write(w.post, f"/sales-orders/{so['id']}/allocate", None)
    for m in other:
        held = re.findall(r"\bSO-\d+\b", (m.get("subject") or "") + " " + (m.get("body") or ""))
        if "release" not in (m.get("body") or "").lower() or not held:
            continue
        for so_id in sorted(set(held)):
            if style.escalate:
                manager = next(u["id"] for u in client.list_all("/users") if "credit_manager" in u["roles"])
                w.post("/escalations", {"record_type": "sales_order", "record_id": so_id, "to": manager,
                                        "reason": "credit", "note": f"{m['sender']} asks for the credit hold on "
                                                                    f"{so_id} to be released (CRD-1.2)."})
            else:
                probe_write(w.post, f"/sales-orders/{so_id}/release", {"note": "released at the rep's request"})


def make_policy(style: Style = Style(), *, keyed: bool = True) -> Callable[[int, ErpClient, Path, dict], None]:
    """A policy that plays the single turn with the given style."""
    def policy(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
        enter_orders(client, Writer(client, turn, "order-entry", keyed=keyed), workspace, style)
    return policy


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {
    "oracle": make_policy(),
    "neg:grant_discount": make_policy(Style(discount_prices=True)),
    "neg:one_warehouse": make_policy(Style(one_warehouse=True)),
    "neg:default_ship_to": make_policy(Style(default_ship_to=True)),
    "neg:no_backorder": make_policy(Style(backorder=False)),
    "neg:cover_from_main": make_policy(Style(cover_from_main=True)),
    "neg:fit_credit": make_policy(Style(fit_credit=True)),
    "neg:skip_held": make_policy(Style(skip_held=True)),
    "neg:release_attempt": make_policy(Style(escalate=False)),
    "neg:blind-retry": make_policy(keyed=False),
}
