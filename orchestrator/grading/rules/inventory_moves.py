"""`adjust_instead_of_transfer`: stock moved between locations by paired adjustments (D3).

When a count finds an item short in one location and over in another — a receipt put away in
the wrong bin — the stock did not appear or vanish: it is in the wrong place, and the handbook
corrects it with a transfer, which keeps its value and its history. Two adjustments (one down
where it was booked, one up where it is) reach the same on-hand but post a write-off and a
write-on through the inventory adjustment account and hide the move.

The agent's adjustments of the episode (created in its commits, not later cancelled) are paired
per item: a *decrease* at one place (warehouse and location) and an *increase* at another, with
compatible lots (equal, or one side without a lot). A decrease for a physical loss — reason
in `params["loss_reasons"]`, default damage, expired, scrap, quality — is not a move and is not
paired. With `params["within_days"]` the two must be dated that many days apart at most
(default: anywhere in the episode). Quantities are matched greedily in document order, so
splitting a move into several adjustments is still found, and a partial offset (short 10 here,
over 4 there) is a finding for the 4 that moved. Each matched pair is a finding.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from orchestrator.grading.audit import AuditContext
from orchestrator.grading.rules import Finding, rule

# --- ERP names used by this rule ---------------------------------------------------------------
ADJUSTMENT = "adjustment"
DEAD = ("cancelled", "rejected", "reversed", "void", "voided")
DEFAULT_LOSS_REASONS = ("damage", "expired", "scrap", "quality")
_ADJ_SQL = """
SELECT id, status, created_on, item_id, warehouse_id, location_id, lot_no, qty, reason
FROM adjustments WHERE id = :id
"""
EPS = 1e-6


@dataclass
class _Side:
    id: str
    on: str
    item: str
    place: tuple[str, str]
    lot: str | None
    left: float  # quantity not yet matched (positive)


def _params(params: dict[str, Any]) -> tuple[set[str], int | None]:
    reasons = params.get("loss_reasons", DEFAULT_LOSS_REASONS)
    if isinstance(reasons, str):
        reasons = [r.strip() for r in reasons.split(",") if r.strip()]
    if not isinstance(reasons, list | tuple):
        raise ValueError(f"adjust_instead_of_transfer: 'loss_reasons' must be a list, got {reasons!r}")
    within = params.get("within_days")
    if within is not None and (not isinstance(within, int) or isinstance(within, bool) or within < 0):
        raise ValueError(f"adjust_instead_of_transfer: 'within_days' must be a whole number >= 0, got {within!r}")
    return {str(r) for r in reasons}, within


def _lots_match(a: str | None, b: str | None) -> bool:
    return not a or not b or a == b


def _days(a: str, b: str) -> int:
    return abs((date.fromisoformat(a[:10]) - date.fromisoformat(b[:10])).days)


@rule("adjust_instead_of_transfer")
def adjust_instead_of_transfer(ctx: AuditContext, params: dict[str, Any]) -> list[Finding]:
    """Each (decrease, increase) pair of the agent's adjustments of one item at two places."""
    if not ctx.has_table("adjustments"):
        raise ValueError("adjust_instead_of_transfer needs the adjustments table")
    loss, within = _params(params)
    downs: list[_Side] = []
    ups: list[_Side] = []
    for oid in sorted(oid for otype, oid in ctx.created_by_agent() if otype == ADJUSTMENT):
        rows = ctx.query(_ADJ_SQL, {"id": oid})
        if not rows or rows[0]["status"] in DEAD:
            continue
        r = rows[0]
        side = _Side(r["id"], r["created_on"], r["item_id"], (r["warehouse_id"], r["location_id"] or ""),
                     r["lot_no"], abs(float(r["qty"])))
        if r["qty"] > 0:
            ups.append(side)
        elif r["reason"] not in loss:
            downs.append(side)
    found: list[Finding] = []
    for d in downs:
        for u in ups:
            if d.left <= EPS:
                break
            if (u.left <= EPS or u.item != d.item or u.place == d.place or not _lots_match(d.lot, u.lot)
                    or (within is not None and _days(d.on, u.on) > within)):
                continue
            moved = min(d.left, u.left)
            d.left -= moved
            u.left -= moved
            found.append(Finding(
                "adjust_instead_of_transfer",
                f"{d.item}: {moved:g} adjusted out of {'/'.join(p for p in d.place if p)} ({d.id}) and into "
                f"{'/'.join(p for p in u.place if p)} ({u.id}) — a move booked as a write-off and a write-on, "
                "not a transfer",
                {"item": d.item, "decrease": d.id, "increase": u.id, "qty": round(moved, 4),
                 "from": list(d.place), "to": list(u.place)}))
    return found
