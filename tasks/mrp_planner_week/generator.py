"""mrp-planner-week (D1): the generator, `generate(ctx)` (docs/pack-authoring.md).

Northgate on Monday 12 October 2026, history to Friday 9 October with the planner's weekly
forecast of the valves and Friday's MRP run (its firm planned orders released). Planted, from
what MRP would plan on Monday (previewed on a scratch copy):
- a foundry's notice (planning inbox, Friday) that one casting's lead time is now much longer:
  with it, that casting's first planned purchase order is late (firm, release date past) and is
  released and expedited; with the old lead time it is not firm and stays unreleased;
- an open order due three weeks after the item runs short: an expedite message;
- an open order due this week for an item not short for a month: a defer message;
- an open order the planner already asked the vendor to expedite on Friday (still open): MRP
  suggests the expedite again, and the request must not be repeated.
"""
from __future__ import annotations

import datetime as dt
import math
from typing import Any

from erp_service.domains import org
from erp_service.domains.comms import deliver
from erp_service.domains.planning import DEFER_DAYS
from erp_service.kernel import pipeline
from tasks.context import GeneratorContext
from tasks.northgate.company import Northgate
from tasks.northgate.planning import install_forecasts, monday_of, preview_mrp, weekly_planning
from tasks.packs import GenerationError

HISTORY_END, LAST_ORDER = "2026-10-09", "2026-06-10"
FOUNDRY = "V-0103"
BUYER, PUR_MGR = "ethan.wright", "maya.chen"
BUYER_LIMIT = 10_000.0
#: The planner's purchase-order limit for releases from MRP (PLN-2.2), dollars.
RELEASE_LIMIT = 100_000
FORECAST_WEEKS = 12
LATE_BY_DAYS = 21          # the expedited orders are due three weeks after they are needed
DEFER_PO_DAYS = 1         # the deferrable order is due on Tuesday at the earliest


def _add(day: str, n: int) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=n)).isoformat()


def _days(a: str, b: str) -> int:
    return (dt.date.fromisoformat(b) - dt.date.fromisoformat(a)).days


def _first_planned(sugs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The earliest planned purchase order per item."""
    out: dict[str, dict[str, Any]] = {}
    for s in sorted(sugs, key=lambda s: (s["due_date"], s["id"])):
        if s["kind"] == "planned_po":
            out.setdefault(s["item_id"], s)
    return out


def _po(ctx: GeneratorContext, ng: Northgate, item_id: str, qty: float, need_by: str) -> dict[str, Any]:
    """An open purchase order placed and sent by the buyer (approved above the buyer's limit)."""
    item = next(i for i in ng.catalog.items if i.id == item_id)
    if not item.preferred_vendor:
        raise GenerationError(f"{item_id} has no preferred vendor")
    po = ctx.erp.post(BUYER, "/purchase-orders", {
        "vendor_id": item.preferred_vendor, "warehouse_id": "WH-MAIN", "need_by": need_by,
        "lines": [{"item_id": item_id, "qty": qty, "unit_price": item.standard_cost, "need_by": need_by}]})
    if qty * item.standard_cost > BUYER_LIMIT:
        ctx.erp.post(PUR_MGR, f"/purchase-orders/{po['id']}/approve", {"note": "Replenishment"})
    ctx.erp.post(BUYER, f"/purchase-orders/{po['id']}/send")
    return dict(po)


def _pick(ctx: GeneratorContext, pools: list[list[str]], taken: set[str], what: str) -> str:
    """A seeded choice from the first pool (in preference order) with an item not yet taken.

    Drawing from the first non-empty pool only keeps the draws of a seed whose preferred pool
    has a candidate the same as with a single pool."""
    for pool in pools:
        free = sorted({i for i in pool if i not in taken})
        if free:
            choice = ctx.rng.choice(free)
            taken.add(choice)
            return choice
    raise GenerationError(f"no item for the {what} in this seed's plan")


def generate(ctx: GeneratorContext) -> None:
    """Build the scenario: Northgate with planning history, the planted orders and notice."""
    ng = ctx.northgate(history_end=HISTORY_END, last_order=LAST_ORDER)
    monday = ctx.start_date
    agent = ctx.agent_user
    ctx.builder.insert(org.approval_limits, user_id=agent, doc_type="purchase_order",
                       limit_cents=RELEASE_LIMIT * 100)
    install_forecasts(ng, first_week=monday_of(HISTORY_END), weeks=FORECAST_WEEKS)
    # Friday's planning routine (history): MRP run, firm planned orders released.
    friday = weekly_planning(ctx.erp, planner=agent)

    base = preview_mrp(ng, on=monday)
    first = _first_planned(base)
    vendor_of = {i.id: i.preferred_vendor for i in ng.catalog.items}
    # The latest order Friday released per item: a planted order must come after it in MRP's
    # date order, so that MRP's message about the planted order is the planted one.
    friday_due: dict[str, str] = {}
    for s in friday["released"]:
        friday_due[s["item_id"]] = max(friday_due.get(s["item_id"], ""), s["due_date"])
    # Every item MRP plans a purchase order for, the other vendors' first: the foundry's
    # castings are kept for the lead-time notice, and used for the action messages only when
    # the seed's plan has too few other bought items short in the horizon (seeds 1 and 4).
    purchased = [i for i in first if vendor_of.get(i)]
    bought = [i for i in purchased if vendor_of.get(i) != FOUNDRY]
    taken: set[str] = set()

    def soon(pool: list[str]) -> list[str]:
        return [i for i in pool if 2 <= _days(monday, first[i]["due_date"]) <= 56]

    exp_item = _pick(ctx, [soon(bought), soon(purchased)], taken, "expedite")
    other_vendor = [i for i in soon(bought) if vendor_of[i] != vendor_of[exp_item]]
    rep_item = _pick(ctx, [other_vendor or soon(bought), soon(purchased)], taken, "repeated expedite")

    def defer_date(i: str) -> str:
        return max(_add(friday_due[i], 1) if i in friday_due else "", _add(monday, DEFER_PO_DAYS))

    def later(pool: list[str]) -> list[str]:
        return [i for i in pool if _days(defer_date(i), first[i]["due_date"]) >= DEFER_DAYS]

    def_item = _pick(ctx, [later(bought), later(purchased)], taken, "defer")
    # The notice's item: bought, not firm with its old lead time (released after the firm
    # window), and late with the new one. The foundry's castings first, any vendor's otherwise.
    lead_of = {i.id: i.lead_time_days for i in ng.catalog.items}
    noticeable = [i for i, s in first.items() if vendor_of.get(i) and _days(monday, s["due_date"]) - lead_of[i] > 6]
    castings = [i for i in noticeable if vendor_of.get(i) == FOUNDRY and i not in taken]
    cast_item = _pick(ctx, [castings, noticeable], taken, "lead-time notice")
    cast_due = first[cast_item]["due_date"]
    old_lead = lead_of[cast_item]
    new_lead = 5 * math.ceil((_days(monday, cast_due) + 5) / 5)

    # The planted orders (the buyer's), Friday's expedite request and the foundry's notice.
    exp_po = _po(ctx, ng, exp_item, first[exp_item]["qty"], _add(first[exp_item]["due_date"], LATE_BY_DAYS))
    rep_po = _po(ctx, ng, rep_item, first[rep_item]["qty"], _add(first[rep_item]["due_date"], LATE_BY_DAYS))
    def_po = _po(ctx, ng, def_item, first[def_item]["qty"], defer_date(def_item))
    friday_request = ctx.erp.post(agent, "/vendor-requests", {
        "kind": "expedite", "po_id": rep_po["id"], "po_line": 1, "requested_date": first[rep_item]["due_date"],
        "reason": "mrp", "note": "Needed earlier for production; please confirm."})
    foundry = ng.vendor(vendor_of[cast_item] or FOUNDRY)
    cast_desc = next(i.description for i in ng.catalog.items if i.id == cast_item)
    body = (f"Hello Northgate planning,\n\nBecause of a capacity shortfall at our plant, the quoted lead "
            f"time for the {cast_desc} ({cast_item}) is now {new_lead} calendar days (previously {old_lead}), "
            f"effective immediately and for all new orders. Orders already confirmed keep their dates.\n\n"
            f"Please update your planning accordingly.\n\n{foundry.name} customer service")
    b = ctx.builder
    out = pipeline.write(b.db, b.actor("sys-mail"), action="msg.deliver", method="SETUP", path="/inbox/planning",
                         body={"subject": "lead time"}, fn=lambda tx: deliver(
                             tx, "planning", f"customerservice@{foundry.domain}",
                             f"Lead time change: {cast_item}", body, received_on=HISTORY_END))
    notice_id = out.data["id"]

    # What MRP plans on Monday with the notice applied, and without it.
    plan = preview_mrp(ng, on=monday, lead_times={cast_item: new_lead})
    stale = preview_mrp(ng, on=monday)
    _check_plan(plan, stale, cast_item, exp_po["id"], rep_po["id"], def_po["id"])
    cast_sug = _first_planned(plan)[cast_item]
    firm_total = sum(s["qty"] * next(i.standard_cost for i in ng.catalog.items if i.id == s["item_id"])
                     for s in plan if s["firm"] and s["kind"] == "planned_po")
    ctx.world.vendor_default = {"requests": {"answer_delay": 1}}
    ctx.world.vendors = {vendor_of[rep_item]: {"requests": {"expedite": {"answer_delay": 3}}}}

    names = {v.id: v.name for v in ng.vendors}
    ctx.truth.planted = {
        "lead_time_notice": {"message": notice_id, "item": cast_item, "old": old_lead, "new": new_lead},
        "late_planned_order": {"item": cast_item, "qty": cast_sug["qty"], "need_date": cast_sug["due_date"]},
        "expedite": {"po": exp_po["id"], "item": exp_item, "need_date": first[exp_item]["due_date"]},
        "defer": {"po": def_po["id"], "item": def_item, "need_date": first[def_item]["due_date"]},
        "already_requested": {"po": rep_po["id"], "item": rep_item, "request": friday_request["id"]},
    }
    ctx.truth.expect = {
        "planning_data": [{"item": cast_item, "lead_time_days": new_lead}],
        "released_orders": [{"doc_type": "purchase_order", "item": cast_item, "n": 1,
                             "need_date": cast_sug["due_date"], "qty": cast_sug["qty"], "from_mrp": "yes"}],
        "vendor_requests": [
            {"kind": "expedite", "item": cast_item, "requested_date": cast_sug["due_date"], "n": 1},
            {"kind": "expedite", "item": exp_item, "vendor": names[vendor_of[exp_item] or ""], "n": 1},
            {"kind": "defer", "item": def_item, "vendor": names[vendor_of[def_item] or ""], "n": 1},
        ],
    }
    ctx.truth.absent = {"vendor_requests": [{"kind": "expedite", "item": rep_item}]}
    ctx.truth.facts = {"friday_run": friday["run"]["id"], "friday_released": len(friday["released"]),
                       "monday_suggestions": len(plan), "firm_planned_value": round(firm_total, 2),
                       "firm_planned": sum(1 for s in plan if s["firm"] and s["kind"].startswith("planned"))}


def _check_plan(plan: list[dict[str, Any]], stale: list[dict[str, Any]], cast_item: str, exp_po: str,
                rep_po: str, def_po: str) -> None:
    """The seed's plan must make each planted judgment matter (else the scenario is refused)."""
    def kinds(po_id: str, sugs: list[dict[str, Any]]) -> list[str]:
        return [s["kind"] for s in sugs if s["po_id"] == po_id]

    problems = []
    cast = _first_planned(plan).get(cast_item)
    if cast is None or not cast["firm"] or not str(cast["note"] or "").startswith("late:"):
        problems.append(f"{cast_item} is not a late firm planned order with the new lead time")
    old = _first_planned(stale).get(cast_item)
    if old is None or old["firm"]:
        problems.append(f"{cast_item} is already firm with the old lead time")
    for po_id, kind in ((exp_po, "expedite"), (rep_po, "expedite"), (def_po, "defer")):
        if kinds(po_id, plan) != [kind]:
            problems.append(f"{po_id}: MRP suggests {kinds(po_id, plan)}, not [{kind}]")
    if problems:
        raise GenerationError("; ".join(problems))
