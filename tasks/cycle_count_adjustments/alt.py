"""cycle-count-adjustments: the second, independent policy, written from the handbook alone.

Mounted alone into `alt` cells, so it imports only the standard library and `agent_sandbox`,
never the oracle's policies.py. It works the sheet the way another inventory controller might,
by a route the handbook allows and the oracle does not take:

- it reads the whole main-plant on-hand in one listing and the sheet's table by its header
  (columns found by name, not position);
- it works item by item: first the moves (an item whose short and over locations cancel exactly
  is transferred, INV-1.5), then the count differences, then the damaged units (INV-1.4) last;
- no Idempotency-Keys: after a failed write it looks for the write's effect in the ERP (an
  adjustment or transfer of the item today with the same location and quantity) and sends again
  only when there is none (GEN-1.3's "check what the ERP recorded").
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import send_checked

WH = "WH-MAIN"


def _sheet(client: ErpClient) -> list[dict[str, Any]]:
    """The count sheet's rows as dicts keyed by the lower-cased header words."""
    sheets = sorted((m for m in client.inbox("warehouse") if "count" in (m.get("subject") or "").lower()),
                    key=lambda m: m["id"])
    body = client.read_message(sheets[-1]["id"])["body"]
    table = [ln.strip().strip("|") for ln in body.splitlines() if ln.strip().startswith("|")]
    header = [h.strip().lower() for h in table[0].split("|")]
    rows = []
    for ln in table[1:]:
        cells = [c.strip() for c in ln.split("|")]
        if set("".join(cells)) <= set("-: "):
            continue
        rows.append(dict(zip(header, cells, strict=False)))
    return rows


def _recorded(client: ErpClient, path: str, item: str, match: dict[str, Any]) -> list[dict[str, Any]]:
    today = client.whoami().get("business_date")
    return [d for d in client.list_all(path, item_id=item)
            if d.get("created_on") == today and all(d.get(k) == v for k, v in match.items())]


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    stock: dict[tuple[str, str], float] = defaultdict(float)
    for r in client.list_all("/inventory/on-hand", warehouse_id=WH):
        if r.get("location_id") and not r.get("lot_no"):
            stock[(r["item_id"], r["location_id"])] += float(r["qty"])
    by_item: dict[str, dict[str, float]] = defaultdict(dict)
    damaged: list[tuple[str, str, int]] = []
    for row in _sheet(client):
        loc = f"{WH}-{row['zone']}"
        found, bad = int(row["counted"]), int(row.get("damaged") or 0)
        by_item[row["item"]][loc] = found + bad - stock[(row["item"], loc)]
        if bad:
            damaged.append((row["item"], loc, bad))

    for item in sorted(by_item):
        locs = by_item[item]
        short = [loc for loc, d in locs.items() if d < 0]
        over = [loc for loc, d in locs.items() if d > 0]
        if len(short) == 1 and len(over) == 1 and abs(locs[short[0]] + locs[over[0]]) < 1e-9:
            qty = -locs[short[0]]
            body = {"item_id": item, "qty": qty, "from_warehouse": WH, "from_location": short[0],
                    "to_warehouse": WH, "to_location": over[0], "note": "misplaced put-away, moved per INV-1.5"}
            done = {"from_location": short[0], "to_location": over[0], "qty": qty}
            send_checked(client, "POST", "/inventory/transfers", body,
                         partial(_recorded, client, "/inventory/transfers", item, done))
            locs[short[0]] = locs[over[0]] = 0.0
        for loc, d in sorted(locs.items()):
            if d:
                _adjust(client, item, loc, d, "count")
    for item, loc, bad in damaged:
        _adjust(client, item, loc, -bad, "damage")


def _adjust(client: ErpClient, item: str, loc: str, qty: float, reason: str) -> None:
    body = {"item_id": item, "warehouse_id": WH, "location_id": loc, "qty": qty, "reason": reason,
            "note": f"cycle count {reason}"}
    send_checked(client, "POST", "/inventory/adjustments", body,
                 partial(_recorded, client, "/inventory/adjustments", item,
                         {"location_id": loc, "qty": qty, "reason": reason}))


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
