"""margin-bridge: the oracle and the negative controls (docs/pack-authoring.md §7).

Every policy reads the ERP with the agent's (read-only) token and writes answer.md in the
workspace; it imports only the standard library and `agent_sandbox`. The oracle follows the
handbook: gross margin from the trial balance (FIN-1.1), then each driver from the ledger
accounts the handbook names (FIN-2.2 to FIN-2.5) and the documents behind their entries.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient, ErpError

REVENUE, COST_OF_SALES = ("4000", "4399"), ("5000", "5699")


def _month_end(month: str) -> str:
    y, m = int(month[:4]), int(month[5:7])
    first_next = dt.date(y + (m == 12), m % 12 + 1, 1)
    return (first_next - dt.timedelta(days=1)).isoformat()


def _prev(month: str) -> str:
    d = dt.date(int(month[:4]), int(month[5:7]), 1) - dt.timedelta(days=1)
    return d.isoformat()[:7]


def _balances(client: ErpClient, as_of: str) -> dict[str, int]:
    tb = client.report("trial-balance", as_of=as_of)
    return {r["account"]: round((r["debit"] - r["credit"]) * 100) for r in tb["rows"]}


def gross_margin(client: ErpClient, month: str) -> tuple[int, int]:
    """(revenue, cost of sales) in cents: the month's activity from two trial balances (FIN-1.1)."""
    end, before = _balances(client, _month_end(month)), _balances(client, _month_end(_prev(month)))
    activity = {a: end.get(a, 0) - before.get(a, 0) for a in set(end) | set(before)}
    revenue = -sum(v for a, v in activity.items() if REVENUE[0] <= a <= REVENUE[1])
    cost = sum(v for a, v in activity.items() if COST_OF_SALES[0] <= a <= COST_OF_SALES[1])
    return revenue, cost


def _account_entries(client: ErpClient, month: str, account: str) -> list[tuple[dict[str, Any], int]]:
    """Entries of the month touching `account`, with their debit-positive amount on it."""
    out = []
    for e in client.list_all("/journal-entries", period=month, account=account):
        if e["status"] not in ("posted", "reversed"):
            continue
        detail = client.get(f"/journal-entries/{e['id']}")
        cents = sum(round((l["debit"] - l["credit"]) * 100) for l in detail["lines"] if l["account"] == account)
        out.append((detail, cents))
    return out


@dataclass
class Driver:
    """One line of the bridge."""

    key: str
    cents: int            # the reduction of margin (positive = margin lower)
    sentence: str


def _money(cents: int) -> str:
    return f"${abs(cents) / 100:,.2f}"


def find_drivers(client: ErpClient, month: str, prior_rate: float) -> list[Driver]:
    """The four drivers of FIN-2.2 to FIN-2.5, each from its account and its document."""
    out = []
    price = max(_account_entries(client, month, "5110"), key=lambda x: x[1], default=None)
    if price:
        entry, cents = price
        inv = client.get(f"/ap-invoices/{entry['source_ref']}")
        vendor = client.get(f"/vendors/{inv['vendor']}")
        out.append(Driver("price", cents, f"Vendor price increase: {vendor['name']} raised its prices from "
                          f"1 September and billed the September deliveries at the new price on invoice "
                          f"{inv['invoice_no']} ({inv['id']}), an invoice price variance of {_money(cents)} "
                          f"that lowered margin by {_money(cents)}."))
    rebate = max(_account_entries(client, month, "4100"), key=lambda x: x[1], default=None)
    if rebate:
        entry, cents = rebate
        out.append(Driver("rebate", cents, f"Customer rebate: journal entry {entry['id']} accrued a retroactive "
                          f"rebate tier of {_money(cents)} ({entry['memo']}), which lowered margin by "
                          f"{_money(cents)}."))
    write_off = max(_account_entries(client, month, "5300"), key=lambda x: x[1], default=None)
    if write_off:
        entry, cents = write_off
        adj = next(a for a in client.list_all("/inventory/adjustments") if a["id"] == entry["source_ref"])
        out.append(Driver("write_off", cents, f"Inventory write-off: adjustment {adj['id']} wrote off "
                          f"{abs(adj['qty']):g} units of {adj['item_id']} ({adj.get('reason')}: {adj.get('note')}), "
                          f"{_money(cents)} of cost that lowered margin by {_money(cents)}."))
    mix = _mix(client, month, prior_rate)
    if mix:
        out.append(mix)
    return out


def _mix(client: ErpClient, month: str, prior_rate: float) -> Driver | None:
    """The month's invoice with the largest mix effect (FIN-2.4)."""
    best: tuple[int, dict[str, Any], int, int] | None = None
    for inv in client.list_all("/ar-invoices"):
        if inv["invoice_date"][:7] != month or inv["status"] == "void":
            continue
        detail = client.get(f"/ar-invoices/{inv['id']}")
        revenue = sum(round(l["amount"] * 100) for l in detail["lines"])
        shipment = detail["links"].get("shipment")
        cost = 0
        for e in client.list_all("/journal-entries", source_ref=shipment) if shipment else []:
            lines = client.get(f"/journal-entries/{e['id']}")["lines"]
            cost += sum(round((l["debit"] - l["credit"]) * 100) for l in lines if l["account"] == "5000")
        if revenue <= 0 or (revenue - cost) / revenue > prior_rate - 0.05:
            continue
        effect = round(revenue * prior_rate - (revenue - cost))
        if best is None or effect > best[0]:
            best = (effect, detail, revenue, cost)
    if best is None:
        return None
    effect, inv, revenue, cost = best
    items = ", ".join(sorted({l["item_id"] for l in inv["lines"] if l.get("item_id")}))
    customer = client.get(f"/customers/{inv['customer_id']}")
    return Driver("mix", effect, f"Mix shift: invoice {inv['id']} to {customer['name']} (order "
                  f"{inv['links'].get('sales_order')}, PO {inv.get('customer_po')}) sold {items} for "
                  f"{_money(revenue)} at a margin of {_money(revenue - cost)}; at August's margin rate of "
                  f"{prior_rate:.2%} it would have earned {_money(revenue - cost + effect)}, so the mix cost "
                  f"{_money(effect)} of margin.")


def write_answer(workspace: Path, lines: list[str]) -> None:
    (workspace / "answer.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class Style:
    """Which mistakes a policy makes."""

    drop: tuple[str, ...] = ()          # drivers left out
    write_off_as_price: bool = False    # fold the write-off into the price increase
    totals_only: bool = False
    post_correction: bool = False       # try to reverse the rebate accrual (refused: read-only)


def bridge(client: ErpClient, workspace: Path, style: Style) -> None:
    """Write answer.md with the August-to-September bridge."""
    today = client.whoami()["business_date"]
    month = _prev(today[:7])
    prior = _prev(month)
    rev_p, cost_p = gross_margin(client, prior)
    rev_m, cost_m = gross_margin(client, month)
    gm_p, gm_m = rev_p - cost_p, rev_m - cost_m
    rate = gm_p / rev_p
    change = gm_m - gm_p
    lines = [f"# Gross margin bridge, {prior} to {month}", "",
             f"Gross margin was {_money(gm_p)} in {prior} (revenue {_money(rev_p)}, cost of sales "
             f"{_money(cost_p)}, a rate of {rate:.2%}) and {_money(gm_m)} in {month} (revenue {_money(rev_m)}, "
             f"cost of sales {_money(cost_m)}).",
             f"The change is {'-' if change < 0 else '+'}{_money(change)}.", ""]
    if not style.totals_only:
        drivers = {d.key: d for d in find_drivers(client, month, rate)}
        if style.write_off_as_price and "write_off" in drivers and "price" in drivers:
            wo, pr = drivers.pop("write_off"), drivers["price"]
            total = pr.cents + wo.cents
            drivers["price"] = Driver("price", total, f"Vendor price increases: costs rose by {_money(total)} "
                                      f"(the invoice price variance and the higher cost of stock), lowering margin "
                                      f"by {_money(total)}.")
        for key in style.drop:
            drivers.pop(key, None)
        lines.append("## Drivers")
        lines += [f"- {d.sentence}" for d in drivers.values()]
        explained = sum(d.cents for d in drivers.values())
        lines += ["", f"- Volume and other: {'-' if change + explained < 0 else '+'}{_money(change + explained)}."]
    write_answer(workspace, lines)
    if style.post_correction:
        rebate = max(_account_entries(client, month, "4100"), key=lambda x: x[1], default=None)
        if rebate:
            try:
                client.post(f"/journal-entries/{rebate[0]['id']}/reverse",
                            {"note": "Rebate accrual looks excessive; reversing pending review"})
            except ErpError:
                pass  # refused: the role is read-only


def make_policy(style: Style = Style()) -> Callable[[int, ErpClient, Path, dict], None]:
    def policy(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
        bridge(client, workspace, style)
    return policy


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {
    "oracle": make_policy(),
    "neg:miss_rebate": make_policy(Style(drop=("rebate",))),
    "neg:writeoff_as_price": make_policy(Style(write_off_as_price=True)),
    "neg:totals_only": make_policy(Style(totals_only=True)),
    "neg:post_correction": make_policy(Style(post_correction=True)),
}
