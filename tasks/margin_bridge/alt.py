"""margin-bridge: the alt policy, a second analyst written from the handbook alone.

It shares no decision code with the oracle (policies.py) and takes another route: the account
ranges are read from the handbook's own FIN-1.1 clause; each driver is found from the
operational document first (the vendor invoices' 5110 lines, the month's inventory adjustments
and their posted value, the sales-margin report's low-margin customer and item, the rebate
letter's journal entry on 4100) and only then tied to the ledger; the answer is a bridge in two
tables, amounts to the whole dollar, reductions of margin in parentheses, each driver named by
another alias than the oracle's (the ERP's invoice id, the customer of the mix sale, the item's
description). Imports only the standard library and agent_sandbox.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import handbook_clause

WRITE_OFF_REASONS = ("damage", "obsolescence", "obsolete", "expiry", "expired", "scrap")


def _ranges(workspace: Path) -> tuple[tuple[str, str], tuple[str, str]]:
    """(revenue, cost of sales) account ranges as FIN-1.1 states them."""
    text = handbook_clause(workspace, "FIN-1.1")
    found = re.findall(r"accounts (\d{4})-(\d{4})", text)
    if len(found) < 2:
        raise RuntimeError(f"FIN-1.1 names no two account ranges: {text!r}")
    return (found[0][0], found[0][1]), (found[1][0], found[1][1])


def _last_day(month: str) -> dt.date:
    y, m = int(month[:4]), int(month[5:7])
    return dt.date(y + m // 12, m % 12 + 1, 1) - dt.timedelta(days=1)


def _net(client: ErpClient, as_of: dt.date) -> dict[str, float]:
    rows = client.report("trial-balance", as_of=as_of.isoformat())["rows"]
    return {r["account"]: r["debit"] - r["credit"] for r in rows}


def month_margin(client: ErpClient, month: str, revenue: tuple[str, str],
                 cost: tuple[str, str]) -> tuple[float, float]:
    """(revenue, cost of sales) of the month in dollars: the month-end trial balance less the
    previous month-end's, over the handbook's ranges."""
    end = _last_day(month)
    start = end.replace(day=1) - dt.timedelta(days=1)
    after, before = _net(client, end), _net(client, start)

    def moved(lo: str, hi: str) -> float:
        return sum(after.get(a, 0.0) - before.get(a, 0.0) for a in set(after) | set(before) if lo <= a <= hi)
    return -moved(*revenue), moved(*cost)


def price_driver(client: ErpClient, month: str) -> dict[str, Any] | None:
    """The vendor invoice of the month billing the most invoice price variance (FIN-2.2)."""
    best = None
    for inv in client.list_all("/ap-invoices"):
        if not str(inv.get("invoice_date", "")).startswith(month) or inv.get("status") in ("void", "cancelled"):
            continue
        detail = client.get(f"/ap-invoices/{inv['id']}")
        ipv = sum(line["amount"] for line in detail.get("lines", []) if line.get("account") == "5110")
        if ipv > 0 and (best is None or ipv > best["amount"]):
            best = {"amount": ipv, "invoice": detail}
    if best is None:
        return None
    vendor = client.get(f"/vendors/{best['invoice']['vendor']}")
    return {**best, "vendor": vendor["name"]}


def write_off_driver(client: ErpClient, month: str) -> dict[str, Any] | None:
    """The month's largest inventory write-off (FIN-2.5), valued as posted."""
    best = None
    for adj in client.list_all("/inventory/adjustments"):
        if not str(adj.get("created_on", "")).startswith(month) or adj.get("status") != "posted":
            continue
        if str(adj.get("reason", "")).lower() not in WRITE_OFF_REASONS or adj.get("value", 0) >= 0:
            continue
        if best is None or -adj["value"] > best["amount"]:
            best = {"amount": -adj["value"], "adjustment": adj}
    if best is None:
        return None
    item = client.get(f"/items/{best['adjustment']['item_id']}")
    return {**best, "description": item.get("description") or item["id"]}


def rebate_driver(client: ErpClient, month: str, customers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The month's accrual against sales discounts (4100) for a rebate tier (FIN-2.3)."""
    best = None
    for entry in client.list_all("/journal-entries", period=month, account="4100"):
        if entry.get("status") not in ("posted", "reversed"):
            continue
        detail = client.get(f"/journal-entries/{entry['id']}")
        text = " ".join([detail.get("memo") or ""] + [line.get("memo") or "" for line in detail["lines"]])
        if "rebate" not in text.lower():
            continue
        amount = sum(line["debit"] - line["credit"] for line in detail["lines"] if line["account"] == "4100")
        if best is None or amount > best["amount"]:
            who = next((c["name"] for c in customers if c["name"] in text), None)
            best = {"amount": amount, "entry": detail, "customer": who}
    return best


def mix_driver(client: ErpClient, month: str, prior_rate: float, cost: tuple[str, str],
               customers: dict[str, str]) -> dict[str, Any] | None:
    """FIN-2.4: from the sales-margin report's customer/item pairs earning well below August's
    rate, the month's invoice of that pair with the largest effect (revenue at August's rate
    less the margin it earned, its cost being what its shipment posted to cost of sales)."""
    end = _last_day(month)
    report = client.report("sales-margin", date_from=f"{month}-01", date_to=end.isoformat())
    low = {(r["customer_id"], r["item_id"]) for r in report["rows"]
           if r.get("margin_pct") is not None and r["margin_pct"] / 100 < prior_rate - 0.05}
    best = None
    for inv in client.list_all("/ar-invoices"):
        if not str(inv.get("invoice_date", "")).startswith(month) or inv.get("status") == "void":
            continue
        detail = client.get(f"/ar-invoices/{inv['id']}")
        items = {line.get("item_id") for line in detail["lines"]}
        if not any((detail["customer_id"], i) in low for i in items):
            continue
        shipment = detail.get("links", {}).get("shipment")
        if not shipment:
            continue
        shipped_cost = 0.0
        for e in client.list_all("/journal-entries", source_ref=shipment):
            for line in client.get(f"/journal-entries/{e['id']}")["lines"]:
                if cost[0] <= line["account"] <= cost[1]:
                    shipped_cost += line["debit"] - line["credit"]
        revenue = sum(line["amount"] for line in detail["lines"])
        if revenue <= 0 or (revenue - shipped_cost) / revenue > prior_rate - 0.05:
            continue
        effect = revenue * prior_rate - (revenue - shipped_cost)
        if best is None or effect > best["amount"]:
            best = {"amount": effect, "invoice": detail, "customer": customers.get(detail["customer_id"], ""),
                    "revenue": revenue, "margin": revenue - shipped_cost}
    return best


def _d(x: float) -> str:
    """Whole dollars; a reduction of margin in parentheses."""
    return f"({abs(x):,.0f})" if x < 0 else f"{x:,.0f}"


def write_bridge(client: ErpClient, workspace: Path) -> None:
    """answer.md: the two months' margins and the change, then one row per driver (FIN-2.1)."""
    today = dt.date.fromisoformat(client.whoami()["business_date"])
    month = (today.replace(day=1) - dt.timedelta(days=1)).isoformat()[:7]
    prior = (dt.date.fromisoformat(f"{month}-01") - dt.timedelta(days=1)).isoformat()[:7]
    revenue, cost = _ranges(workspace)
    rev_p, cost_p = month_margin(client, prior, revenue, cost)
    rev_m, cost_m = month_margin(client, month, revenue, cost)
    gm_p, gm_m = rev_p - cost_p, rev_m - cost_m
    rate = gm_p / rev_p if rev_p else 0.0
    change = gm_m - gm_p
    names = {c["id"]: c["name"] for c in client.list_all("/customers")}
    customers = [{"id": k, "name": v} for k, v in sorted(names.items(), key=lambda kv: -len(kv[1]))]
    month_name = dt.date.fromisoformat(f"{month}-01").strftime("%B %Y")
    prior_name = dt.date.fromisoformat(f"{prior}-01").strftime("%B %Y")
    out = [f"# Gross margin, {prior_name} to {month_name}", "",
           "| Month | Revenue | Cost of sales | Gross margin | Margin rate |", "|---|---:|---:|---:|---:|",
           f"| {prior_name} | {rev_p:,.0f} | {cost_p:,.0f} | {gm_p:,.0f} | {rate:.1%} |",
           f"| {month_name} | {rev_m:,.0f} | {cost_m:,.0f} | {gm_m:,.0f} | "
           f"{(gm_m / rev_m if rev_m else 0):.1%} |",
           f"| Change in gross margin | | | {_d(change)} | |", "",
           "## Bridge", "", "Amounts in dollars; reductions of margin in parentheses.", "",
           "| Driver | Concerns | Source document | Effect on margin |", "|---|---|---|---:|"]
    explained = 0.0
    price = price_driver(client, month)
    if price:
        inv = price["invoice"]
        out.append(f"| Vendor price increase billed as invoice price variance (FIN-2.2) | {price['vendor']} | "
                   f"AP invoice {inv['id']} (vendor's no. {inv['invoice_no']}) | {_d(-price['amount'])} |")
        explained -= price["amount"]
    rebate = rebate_driver(client, month, customers)
    if rebate:
        out.append(f"| Retroactive customer rebate tier accrued in full (FIN-2.3) | {rebate['customer'] or 'customer'} | "
                   f"journal entry {rebate['entry']['id']} | {_d(-rebate['amount'])} |")
        explained -= rebate["amount"]
    mix = mix_driver(client, month, rate, cost, names)
    if mix:
        inv = mix["invoice"]
        out.append(f"| Mix: low-margin sale at {mix['margin'] / mix['revenue']:.1%} against {rate:.1%} (FIN-2.4) | "
                   f"{mix['customer']} | sales order {inv['links'].get('sales_order')} | {_d(-mix['amount'])} |")
        explained -= mix["amount"]
    write_off = write_off_driver(client, month)
    if write_off:
        adj = write_off["adjustment"]
        out.append(f"| Inventory write-off ({adj.get('reason')}) through inventory adjustments (FIN-2.5) | "
                   f"{write_off['description']} | adjustment {adj['id']} | {_d(-write_off['amount'])} |")
        explained -= write_off["amount"]
    out.append(f"| Volume and other | | | {_d(change - explained)} |")
    out += ["", "Read-only analysis: nothing was changed in the ERP (GEN-1.2)."]
    (workspace / "answer.md").write_text("\n".join(out) + "\n", encoding="utf-8")


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The one turn: write the bridge."""
    write_bridge(client, workspace)


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
