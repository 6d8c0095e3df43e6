"""cycle-count-adjustments (D3): the generator, `generate(ctx)` (docs/pack-authoring.md).

Northgate on Wednesday 14 October 2026. Northgate's history keeps the main plant's stock
unlocated; the set-up puts six items into zones A01 and B01 (transfers, before the episode) and
sets the company's adjustment approval threshold ($500.00). The night shift's count sheet waits
in the warehouse inbox, one line per item and zone (counted good units, damaged units):

- `match`: agrees with the system;
- `small_short` / `small_over`: a difference worth $500.00 or less: an adjustment that posts;
- `large_short`: a difference worth more: one adjustment, held for the controller's approval;
- `damaged`: good units plus damaged units agree; the damaged ones are written off (damage);
- `misplaced`: one item short in A01 and over by the same quantity in B01 (a receipt put away
  in the wrong zone): one transfer A01 -> B01.
Quantities and items are drawn from the seed; every figure is checked against the plan.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

from erp_service.domains.comms.mail import deliver
from erp_service.domains.inventory.schemas import TransferIn
from erp_service.domains.inventory.service import APPROVAL_SETTING, create_transfer
from erp_service.domains.org import company
from tasks.context import GeneratorContext, Row
from tasks.packs import GenerationError

HISTORY_END = "2026-10-13"
WH, A01, B01 = "WH-MAIN", "WH-MAIN-A01", "WH-MAIN-B01"
THRESHOLD = 500.00
ROLES = ("match", "small_short", "small_over", "large_short", "damaged", "misplaced")
_STOCK_SQL = """
SELECT t.item_id AS item, SUM(t.qty) AS qty, i.standard_cost AS cost
FROM inventory_txns t JOIN items i ON i.id = t.item_id
WHERE t.warehouse_id = 'WH-MAIN' AND t.location_id IS NULL AND t.lot_no IS NULL AND i.lot_controlled = 0
  AND i.active = 1
GROUP BY t.item_id, i.standard_cost
HAVING SUM(t.qty) >= 40 AND i.standard_cost BETWEEN 2 AND 80 AND SUM(t.qty) = CAST(SUM(t.qty) AS INTEGER)
ORDER BY t.item_id
"""


@dataclass
class Line:
    """One line of the count sheet and what the handbook makes of it."""

    role: str
    item: str
    location: str
    system: int
    counted: int
    damaged: int = 0


def _units(rng, low: float, high: float, cost: float, cap: int | None) -> int:
    """A whole quantity whose value lies in [low, high] dollars, below `cap` units (a shortage
    cannot exceed the stock; an overage has no cap)."""
    n = max(1, math.floor(rng.uniform(low, high) / cost))
    if cap is not None and n >= cap:
        n = max(1, cap // 2)  # a cheap item with little stock: half of it (its value is then lower)
    elif n * cost < low - cost:
        raise GenerationError(f"no quantity worth ${low:.0f}-${high:.0f} at ${cost}")
    if n * cost > high + 0.005 or (cap is not None and n >= cap):
        raise GenerationError(f"no quantity worth ${low:.0f}-${high:.0f} at ${cost} below {cap} units")
    return n


def generate(ctx: GeneratorContext) -> None:
    ctx.northgate(history_end=HISTORY_END)
    b = ctx.builder
    b.set_date(HISTORY_END)
    rng = ctx.rng
    stock = b.run("sys-setup", lambda tx: [dict(r) for r in tx.conn.exec_driver_sql(_STOCK_SQL).mappings()])
    big = [s for s in stock if s["qty"] * s["cost"] >= 2_000]
    if len(stock) < 8 or not big:
        raise GenerationError(f"too few stocked items to count ({len(stock)})")
    large = rng.choice(big)
    rest = [s for s in stock if s["item"] != large["item"]]
    picked = dict(zip(("match", "small_short", "small_over", "damaged", "misplaced"), rng.sample(rest, 5), strict=True))
    picked["large_short"] = large
    cost = {r: float(picked[r]["cost"]) for r in ROLES}
    qty = {r: int(picked[r]["qty"]) for r in ROLES}

    lines: list[Line] = [Line("match", picked["match"]["item"], A01, qty["match"], qty["match"])]
    d = _units(rng, 120, THRESHOLD, cost["small_short"], qty["small_short"])
    lines.append(Line("small_short", picked["small_short"]["item"], A01, qty["small_short"], qty["small_short"] - d))
    d = _units(rng, 120, THRESHOLD, cost["small_over"], None)
    lines.append(Line("small_over", picked["small_over"]["item"], B01, qty["small_over"], qty["small_over"] + d))
    d = _units(rng, 700, 1_800, cost["large_short"], qty["large_short"])
    lines.append(Line("large_short", picked["large_short"]["item"], A01, qty["large_short"], qty["large_short"] - d))
    k = _units(rng, 40, 300, cost["damaged"], qty["damaged"])
    lines.append(Line("damaged", picked["damaged"]["item"], A01, qty["damaged"], qty["damaged"] - k, k))
    f = picked["misplaced"]["item"]
    in_b = qty["misplaced"] // 3
    in_a = qty["misplaced"] - in_b
    # At most half of A01's stock: a blind re-send of the transfer must be able to move it twice
    # (the lost-writes profile's control).
    n = _units(rng, 120, THRESHOLD, cost["misplaced"], in_a // 2 + 1)
    lines.append(Line("misplaced", f, A01, in_a, in_a - n))
    lines.append(Line("misplaced", f, B01, in_b, in_b + n))

    # Put the counted stock where the system says it is (set-up writes, not in the episode's log).
    for line in lines:
        if line.role == "misplaced" and line.location == B01:
            continue
        where = [(A01, in_a), (B01, in_b)] if line.role == "misplaced" else [(line.location, line.system)]
        for loc, units in where:
            body = TransferIn(item_id=line.item, qty=units, from_warehouse=WH, to_warehouse=WH, to_location=loc,
                              note="zone put-away before the cycle count")
            b.act("sys-setup", "inv.transfer", "/inventory/transfers", body.model_dump(),
                  partial(create_transfer, body=body))
    b.insert(company, key=APPROVAL_SETTING, value=str(int(THRESHOLD * 100)))

    order = list(lines)
    rng.shuffle(order)
    rows = "\n".join(f"| {l.item} | {l.location.removeprefix('WH-MAIN-')} | {l.counted} | {l.damaged} |" for l in order)
    body_text = (
        "Hi Kim,\n\nCycle count of the main plant (WH-MAIN), zones A01 and B01, counted last night.\n"
        "Counted = good units on the shelf; Damaged = units found damaged (still on the shelf, not usable).\n\n"
        "| Item | Zone | Counted | Damaged |\n|---|---|---|---|\n" + rows +
        "\n\nItems not listed were not counted this cycle.\n\nThanks,\nNight shift, receiving")
    b.act("sys-setup", "msg.deliver", "/sim/warehouse", None, partial(
        deliver, box="warehouse", sender="nightshift@northgatevalve.com",
        subject="Cycle count A01/B01 — results", body=body_text, received_on=HISTORY_END))
    b.set_date(ctx.start_date)
    ctx.world.vendor_default = {"silent": True}

    def adj(line: Line, qty_: int, reason: str) -> Row:
        value = abs(qty_) * cost[line.role]
        status = "pending_approval" if value > THRESHOLD + 0.005 else "posted"
        return {"item": line.item, "location": line.location, "reason": reason, "status": status,
                "qty": float(qty_), "entries": 1.0}

    by_role = {l.role: l for l in lines if l.role != "misplaced"}
    expect_adj = [adj(by_role[r], by_role[r].counted - by_role[r].system, "count")
                  for r in ("small_short", "small_over", "large_short")]
    expect_adj.append(adj(by_role["damaged"], -by_role["damaged"].damaged, "damage"))
    if expect_adj[2]["status"] != "pending_approval" or any(e["status"] != "posted" for e in expect_adj[:2] + expect_adj[3:]):
        raise GenerationError(f"the threshold does not separate the lines as planned: {expect_adj}")
    onhand: list[Row] = []
    for l in lines:
        final = l.system if l.role in ("large_short", "misplaced") else l.counted
        onhand.append({"item": l.item, "location": l.location, "qty": float(final)})
    onhand = [o for o in onhand if o["item"] != f]
    onhand += [{"item": f, "location": A01, "qty": float(in_a - n)}, {"item": f, "location": B01, "qty": float(in_b + n)}]
    truth = ctx.truth
    truth.planted = {f"{l.role}:{l.location}": {"item": l.item, "location": l.location, "system": l.system,
                                                "counted": l.counted, "damaged": l.damaged,
                                                "standard_cost": cost[l.role]} for l in lines}
    truth.facts = {"threshold": THRESHOLD, "misplaced_qty": n, "misplaced_item": f}
    truth.expect = {"onhand": onhand, "adjustments": expect_adj,
                    "transfers": [{"item": f, "from_location": A01, "to_location": B01, "qty": float(n)}]}
    truth.absent = {"adjustments": [{"item": f}], "transfers": [{"item": by_role["small_short"].item}]}
