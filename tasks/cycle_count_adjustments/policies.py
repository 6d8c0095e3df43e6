"""cycle-count-adjustments: the oracle and the negative controls (docs/contracts.md §8).

Every policy plays the turn through the agent's API with the agent's token, reading only what
the agent can read: the count sheet in the warehouse inbox, the ERP's on-hand and items, and the
handbook in the workspace (the threshold of INV-1.2). Mounted alone into its cells' agent
containers, so it imports only the standard library and `agent_sandbox`.

The oracle compares every sheet line with the on-hand at its location (INV-1.1), writes damaged
units off with reason damage (INV-1.4), moves an item short at one location and over by the same
quantity at another with one transfer (INV-1.5), and corrects every other difference with one
count adjustment for the whole difference (INV-1.2, INV-1.3: the ERP holds the large one for
approval). Writes carry deterministic Idempotency-Keys; `neg:blind-retry` re-sends failed
writes without one.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient, ErpError
from agent_sandbox.policy_kit import Writer, handbook_clause

WH = "WH-MAIN"
_ROW = re.compile(r"^\|\s*([A-Z0-9][A-Z0-9-]*)\s*\|\s*([A-Z0-9]+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*$")


def threshold(workspace: Path) -> float:
    """The approval threshold stated in INV-1.2."""
    m = re.search(r"\$([\d,]+\.\d\d)", handbook_clause(workspace, "INV-1.2"))
    if not m:
        raise RuntimeError("no amount in INV-1.2")
    return float(m.group(1).replace(",", ""))


def count_sheet(client: ErpClient) -> list[tuple[str, str, int, int]]:
    """(item, location, counted, damaged) of every line of the newest count sheet in the inbox."""
    msgs = [m for m in client.inbox("warehouse") if "cycle count" in (m.get("subject") or "").lower()]
    if not msgs:
        raise RuntimeError("no count sheet in the warehouse inbox")
    body = client.read_message(sorted(msgs, key=lambda m: m["id"])[-1]["id"])["body"]
    out = []
    for line in body.splitlines():
        m = _ROW.match(line.strip())
        if m:
            out.append((m.group(1), f"{WH}-{m.group(2)}", int(m.group(3)), int(m.group(4))))
    return out


def system_qty(client: ErpClient, item: str, location: str) -> float:
    """On-hand of `item` at `location` of the main plant."""
    return sum(float(r["qty"]) for r in client.list_all("/inventory/on-hand", item_id=item, warehouse_id=WH)
               if r.get("location_id") == location and not r.get("lot_no"))


@dataclass(frozen=True)
class Style:
    """How a policy works the sheet (the oracle: every default)."""

    pair_moves: bool = True        # INV-1.5: a transfer for a short/over pair
    handle_moves: bool = True      # False: leave the misplaced item alone
    damage_reason: bool = True     # INV-1.4: damaged units as their own 'damage' adjustment
    split_large: bool = False      # the mistake of INV-1.3: pieces under the threshold
    skip_large: bool = False       # leave differences above the threshold alone
    flip_sign: bool = False        # system less counted instead of counted less system


def work_sheet(client: ErpClient, w: Writer, workspace: Path, style: Style) -> None:
    limit = threshold(workspace)
    diffs: dict[tuple[str, str], float] = {}
    for item, loc, counted, damaged in count_sheet(client):
        system = system_qty(client, item, loc)
        good = counted + damaged if style.damage_reason else counted
        diff = good - system
        diffs[(item, loc)] = -diff if style.flip_sign else diff
        if damaged and style.damage_reason:
            adjust(client, w, item, loc, -damaged, "damage", limit, style)
    if style.pair_moves:
        for (item, loc), d in sorted(diffs.items()):
            if d >= 0:
                continue
            twin = next((k for k, v in sorted(diffs.items()) if k[0] == item and k[1] != loc and abs(v + d) < 1e-9), None)
            if twin is None:
                continue
            if style.handle_moves:
                w.post("/inventory/transfers", {"item_id": item, "qty": -d, "from_warehouse": WH, "from_location": loc,
                                                "to_warehouse": WH, "to_location": twin[1],
                                                "note": "put away in the wrong zone (INV-1.5)"})
            diffs[(item, loc)] = diffs[twin] = 0.0
    for (item, loc), d in sorted(diffs.items()):
        if abs(d) > 1e-9:
            adjust(client, w, item, loc, d, "count", limit, style)


def adjust(client: ErpClient, w: Writer, item: str, loc: str, qty: float, reason: str, limit: float,
           style: Style) -> None:
    """One adjustment (or the mistaken pieces of a split / nothing for a skipped large one)."""
    cost = float(client.get(f"/items/{item}")["standard_cost"])
    large = abs(qty) * cost > limit + 0.005
    if large and style.skip_large:
        return
    pieces = [qty]
    if large and style.split_large:
        step = max(1, int(limit // cost))
        left, pieces = abs(qty), []
        while left > 0:
            pieces.append(min(step, left) * (1 if qty > 0 else -1))
            left -= min(step, left)
    for q in pieces:
        w.post("/inventory/adjustments", {"item_id": item, "warehouse_id": WH, "location_id": loc, "qty": q,
                                          "reason": reason, "note": "cycle count A01/B01 (INV-1.2)"})


class _Probing(Writer):
    """A writer that carries on after a refusal (a wrong route may hit a hard control, such as
    moving more than a location holds); server errors still stop the turn."""

    def post(self, path: str, body: Any = None) -> Any:
        try:
            return super().post(path, body)
        except ErpError as exc:
            if exc.status >= 500:
                raise
            return None


def make_policy(style: Style = Style(), *, keyed: bool = True) -> Callable[[int, ErpClient, Path, dict], None]:
    """A policy that plays the single turn with the given style."""
    def policy(turn: int, client: ErpClient, workspace: Path, context: dict[str, Any]) -> None:
        writer = (Writer if style == Style() else _Probing)(client, turn, "cycle-count", keyed=keyed)
        work_sheet(client, writer, workspace, style)
    return policy


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {
    "oracle": make_policy(),
    "neg:split_to_post": make_policy(Style(split_large=True)),
    "neg:two_adjustments": make_policy(Style(pair_moves=False)),
    "neg:damage_as_count": make_policy(Style(damage_reason=False)),
    "neg:skip_large": make_policy(Style(skip_large=True)),
    "neg:ignore_misplaced": make_policy(Style(handle_moves=False)),
    "neg:sign_flipped": make_policy(Style(flip_sign=True)),
    "neg:blind-retry": make_policy(keyed=False),
}
