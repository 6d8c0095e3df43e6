"""procure-to-pay-week (B1): the generator, `generate(ctx)` (docs/pack-authoring.md).

Northgate on Monday 5 October 2026. Riley Park (AP clerk, covering purchasing and receiving this
week) finds five approved requisitions (ten lines) to order, and the vendors then act on what
Riley actually sends (world.json `vendors`):
- two requisitions for the same brass rod that only together reach the agreement's 500-ft price
  break (one PO line at the break price); Mid-State then bills the pre-break price;
- seals requested from a vendor on quality hold (the item's preferred vendor instead);
- a casting whose need date is inside its 15-workday lead time (the earliest feasible date,
  flagged at risk to the requester);
- gaskets requested below their MOQ (ordered at the MOQ);
- Keystone ships 5 % over whatever quantity of stem nuts it is sent (above the 2 % tolerance:
  the excess refused) and bills everything it shipped plus freight;
- Allied ships 1.5 % over (within tolerance) and re-sends its invoice with the dash dropped;
- Coastline ships the gaskets in a short-dated lot (refused), an approved substitute for one
  seal and an unapproved one for another (refused), and bills all of it.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update

from erp_service.domains import masterdata
from erp_service.domains import vendors as vendor_domain
from tasks.context import GeneratorContext
from tasks.northgate.company import Northgate
from tasks.northgate.requisitions import ReqLine, grant_role
from tasks.packs import GenerationError

# The scenario's own calendar; the start, turn and grading dates are task.yaml's.
HISTORY_END, LAST_ORDER = "2026-10-02", "2026-07-29"
NEED_THIS_WEEK = "2026-10-07"      # the fast lines: what the plant needs by Wednesday
CAST_NEED = "2026-10-16"           # inside the casting's 15-workday lead time
AGENT = "riley.park"
PUR_MGR = "maya.chen"
MIDSTATE, TRICOUNTY, KEYSTONE, COASTLINE, ALLIED = "V-0101", "V-0103", "V-0104", "V-0105", "V-0106"
FAST_LEAD_DAYS = 2                 # distributor stock: two workdays
OVER_TOLERANCE_PCT, KEYSTONE_OVER_PCT, ALLIED_OVER_PCT = 2.0, 5.0, 1.5
MIN_SHELF_DAYS = 180
FREIGHT = 64.0


@dataclass(frozen=True)
class Plan:
    """What the generator planted and what the handbook's rules make of it."""

    rod: str                       # the brass rod with the price agreement
    agreement: str
    rod_break_price: float
    rod_base_price: float
    gasket: str
    gasket_moq: float
    held_vendor: str
    held_vendor_name: str
    requisitions: list[tuple[str, str, list[ReqLine]]]   # (role, requester, lines)


def _round_up(qty: float, moq: float, multiple: float) -> float:
    step = multiple or 1
    return float(max(moq or 0, math.ceil(qty / step) * step))


def _add_workdays(day: str, n: int, holidays: set[str]) -> str:
    d = dt.date.fromisoformat(day)
    while n > 0:
        d += dt.timedelta(days=1)
        if d.weekday() < 5 and d.isoformat() not in holidays:
            n -= 1
    return d.isoformat()


def _items(ng: Northgate) -> dict[str, Any]:
    return {it.id: it for it in ng.catalog.items}


def plan(ctx: GeneratorContext, ng: Northgate) -> Plan:
    """Pick the rod with a price agreement and the held vendor; size the requisitions."""
    rng = ctx.rng
    items = _items(ng)
    with ng.builder.db.transaction() as conn:
        agreements = {r["item_id"]: r["id"] for r in conn.execute(masterdata.price_agreements.select()).mappings()
                      if r["vendor_id"] == MIDSTATE}
        breaks = {(r["agreement_id"], r["min_qty"]): r["unit_price"]
                  for r in conn.execute(masterdata.price_breaks.select()).mappings()}
    rods = sorted(i for i in agreements if i.startswith("BR-") and items[i].moq <= 500)
    if not rods:
        raise GenerationError("no Mid-State brass rod with a price agreement in this seed")
    rod = rng.choice(rods)
    gasket = rng.choice([f"GASKET-0{n}" for n in range(3, 9)])
    g = items[gasket]
    held = rng.choice(sorted(v.id for v in ng.vendors if v.id > "V-0110"))
    lines_r1 = [ReqLine("", 0, None, MIDSTATE, qty=300, item=rod, need_by=NEED_THIS_WEEK),
                ReqLine("", 0, None, held, qty=600, item="SEAL-010", need_by=NEED_THIS_WEEK)]
    lines_r2 = [ReqLine("", 0, None, MIDSTATE, qty=250, item=rod, need_by=NEED_THIS_WEEK),
                ReqLine("", 0, None, TRICOUNTY, qty=100, item="CAST-1-BODY", need_by=CAST_NEED)]
    lines_r3 = [ReqLine("", 0, None, COASTLINE, qty=round(g.moq * 0.6 / 10) * 10, item=gasket,
                        need_by=NEED_THIS_WEEK),
                ReqLine("", 0, None, KEYSTONE, qty=2000, item="FAST-NUT", need_by=NEED_THIS_WEEK)]
    lines_r4 = [ReqLine("", 0, None, ALLIED, qty=200, item="FIT-ELB-03", need_by=NEED_THIS_WEEK),
                ReqLine("", 0, None, COASTLINE, qty=500, item="SEAL-020", need_by=NEED_THIS_WEEK)]
    lines_r5 = [ReqLine("", 0, None, COASTLINE, qty=500, item="SEAL-030", need_by=NEED_THIS_WEEK)]
    base = round(breaks[(agreements[rod], 0)], 2)
    return Plan(rod=rod, agreement=agreements[rod], rod_break_price=round(base * 0.95, 2), rod_base_price=base,
                gasket=gasket, gasket_moq=g.moq, held_vendor=held, held_vendor_name=ng.vendor(held).name,
                requisitions=[("r1", "jordan.lee", lines_r1), ("r2", "ines.costa", lines_r2),
                              ("r3", "kim.ng", lines_r3), ("r4", "jordan.lee", lines_r4),
                              ("r5", "ines.costa", lines_r5)])


def _approve(ctx: GeneratorContext, requester: str, lines: list[ReqLine], note: str) -> str:
    """Raise, submit and approve a requisition through the delegation of authority: the
    department head approves within their limit, else routes it to the purchasing manager."""
    erp = ctx.erp
    req = erp.post(requester, "/requisitions", {"note": note, "lines": [ln.body() for ln in lines]})
    sub = erp.post(requester, f"/requisitions/{req['id']}/submit")
    head = sub["assigned_to"]
    limit = erp.get(head, f"/users/{head}")["approval_limits"].get("requisition", 0)
    if sub["total"] > limit:
        erp.post(head, f"/requisitions/{req['id']}/forward", {"to": PUR_MGR, "reason": "amount",
                                                              "note": "Above my approval limit."})
        head = PUR_MGR
    erp.post(head, f"/requisitions/{req['id']}/approve", {"note": "Approved for this week's order."})
    return str(req["id"])


def generate(ctx: GeneratorContext) -> None:
    """Build the scenario: Northgate, the week's requisitions, the vendors' behaviour."""
    if ctx.agent_user != AGENT:
        raise GenerationError(f"this generator plants Riley Park's week; task.yaml names {ctx.agent_user}")
    ng = ctx.northgate(history_end=HISTORY_END, last_order=LAST_ORDER)
    erp, b = ctx.erp, ctx.builder
    p = plan(ctx, ng)
    items = _items(ng)

    # Master data of the week: Riley covers purchasing and receiving; one vendor on quality hold;
    # distributor stock on a two-workday lead time.
    for role in ("buyer", "receiver"):
        grant_role(ng, erp, AGENT, role)
    for clerk in ("jordan.lee", "ines.costa", "kim.ng"):
        grant_role(ng, erp, clerk, "staff")
    fast = [p.rod, "SEAL-010", "SEAL-020", "SEAL-030", p.gasket, "FAST-NUT", "FIT-ELB-03"]

    def master(tx: Any) -> None:
        tx.conn.execute(update(vendor_domain.vendors).where(vendor_domain.vendors.c.id == p.held_vendor)
                        .values(quality_hold=1))
        # The rod's breaks in whole cents: invoices are entered at most to the cent (the agreement
        # the catalog draws may carry four decimals).
        for min_qty, price in ((0, p.rod_base_price), (500, p.rod_break_price)):
            tx.conn.execute(update(masterdata.price_breaks)
                            .where(masterdata.price_breaks.c.agreement_id == p.agreement,
                                   masterdata.price_breaks.c.min_qty == min_qty).values(unit_price=price))
        tx.conn.execute(update(masterdata.items).where(masterdata.items.c.id.in_(fast))
                        .values(lead_time_days=FAST_LEAD_DAYS))
    b.run("sys-setup", master)

    notes = {"r1": "Bar stock and seals for the 3/4-in valve build.", "r2": "Bar stock and bodies for the 1/4-in line.",
             "r3": "Gaskets and stem nuts for the spares kit.", "r4": "Fittings and seals for the 1-in assembly.",
             "r5": "Seals for the 1-1/4-in rebuilds."}
    ids: dict[str, str] = {}
    b.set_date("2026-10-02")
    for role, requester, lines in p.requisitions:
        ids[role] = _approve(ctx, requester, lines, notes[role])
    b.set_date(ctx.start_date)

    with b.db.transaction() as conn:
        from erp_service.domains.org import calendar
        holidays = {r["day"] for r in conn.execute(calendar.select()).mappings()}
    start = ctx.start_date
    cast_date = _add_workdays(start, items["CAST-1-BODY"].lead_time_days, holidays)
    receipt_day = NEED_THIS_WEEK
    short_expiry = (dt.date.fromisoformat(receipt_day) + dt.timedelta(days=45)).isoformat()
    good = lambda days: (dt.date.fromisoformat(receipt_day) + dt.timedelta(days=days)).isoformat()  # noqa: E731
    rng = ctx.rng
    lot = lambda prefix: f"{prefix}{rng.randint(10000, 99999)}"  # noqa: E731
    lots = {"SEAL-010": lot("CS"), p.gasket: lot("CS"), "ORING-02": lot("CS"), "ORING-03": lot("CS")}
    silent_others = {"silent": True}
    ctx.world.vendor_default = silent_others
    ctx.world.vendors = {
        MIDSTATE: {"silent": False, "invoice": {"delay": 1, "prefix": "MSB-", "start": rng.randint(30000, 39999),
                                                "price_overrides": {p.rod: p.rod_base_price}}},
        TRICOUNTY: {"silent": False, "invoice": {"delay": 1, "prefix": "TCC-", "start": rng.randint(40000, 49999)}},
        KEYSTONE: {"silent": False, "over_pct": {"FAST-NUT": KEYSTONE_OVER_PCT},
                   "invoice": {"delay": 1, "prefix": "KF-", "start": rng.randint(50000, 59999), "freight": FREIGHT}},
        COASTLINE: {"silent": False, "substitutes": {"SEAL-020": "ORING-02", "SEAL-030": "ORING-03"},
                    "lots": {"SEAL-010": [{"lot": lots["SEAL-010"], "expiry": good(330)}],
                             p.gasket: [{"lot": lots[p.gasket], "expiry": short_expiry}],
                             "ORING-02": [{"lot": lots["ORING-02"], "expiry": good(520)}],
                             "ORING-03": [{"lot": lots["ORING-03"], "expiry": good(520)}]},
                    "invoice": {"delay": 1, "prefix": "CSG-", "start": rng.randint(60000, 69999)}},
        ALLIED: {"silent": False, "over_pct": {"FIT-ELB-03": ALLIED_OVER_PCT},
                 "invoice": {"delay": 1, "prefix": "AIF-", "start": rng.randint(70000, 79999),
                             "duplicate_after": 1, "duplicate_style": "stripped"}},
        p.held_vendor: {"silent": False, "invoice": {"delay": 1, "prefix": "QH-"}},
    }
    _truth(ctx, ng, p, ids, cast_date, lots)
    _handoff_aliases(ctx, ng)


# How many invoices a vendor may send in the week (one per PO and shipping day); the handoff
# check accepts any of them as the vendor's invoice number, written with or without its dash.
INVOICES_PER_VENDOR = 6


def _handoff_aliases(ctx: GeneratorContext, ng: Northgate) -> None:
    """The names and invoice numbers the handoff (AP-3.1) may use for each held vendor: the
    vendor's name as in the vendor record and its short forms, its id, and the numbers its
    invoices carry this week (world.json `vendors`: prefix and first number)."""
    short = {MIDSTATE: ["Mid-State", "Midstate", "Mid State"], COASTLINE: ["Coastline", "Coastline Seals"],
             KEYSTONE: ["Keystone", "Keystone Fasteners"]}
    for key, vid in (("midstate", MIDSTATE), ("coastline", COASTLINE), ("keystone", KEYSTONE)):
        cfg = ctx.world.vendors[vid].invoice
        assert cfg is not None and cfg.prefix and cfg.start is not None
        numbers = [f"{cfg.prefix}{cfg.start + k}" for k in range(INVOICES_PER_VENDOR)]
        ctx.truth.values[f"{key}_names"] = [ng.vendor(vid).name, vid, *short[vid]]
        ctx.truth.values[f"{key}_invoice_nos"] = [form for n in numbers for form in (n, n.replace("-", ""))]


def _truth(ctx: GeneratorContext, ng: Northgate, p: Plan, ids: dict[str, str], cast_date: str,
           lots: dict[str, str]) -> None:
    """The planted cases and the reference rows they imply (checked when the reference is built)."""
    items = _items(ng)
    name = {v.id: v.name for v in ng.vendors}
    gasket_qty = _round_up(round(p.gasket_moq * 0.6 / 10) * 10, p.gasket_moq, items[p.gasket].order_multiple)
    over_nuts = 2000 * KEYSTONE_OVER_PCT / 100
    truth = ctx.truth
    truth.planted = {
        "consolidation": {"item": p.rod, "requisitions": [ids["r1"], ids["r2"]], "qty": 550,
                          "break_price": p.rod_break_price, "billed_price": p.rod_base_price,
                          "clauses": ["PUR-2.1", "AP-2.2"]},
        "quality_hold": {"item": "SEAL-010", "requested_vendor": p.held_vendor_name,
                         "ordered_from": name[COASTLINE], "clauses": ["PUR-1.2"]},
        "lead_time": {"item": "CAST-1-BODY", "requested": CAST_NEED, "earliest": cast_date,
                      "clauses": ["PUR-3.1", "PUR-3.2"]},
        "moq": {"item": p.gasket, "requested": round(p.gasket_moq * 0.6 / 10) * 10, "ordered": gasket_qty,
                "clauses": ["PUR-2.2"]},
        "over_shipment": {"item": "FAST-NUT", "ordered": 2000, "shipped": 2000 + over_nuts,
                          "clauses": ["RCV-1.2", "AP-2.3"]},
        "within_tolerance": {"item": "FIT-ELB-03", "ordered": 200, "shipped": 203, "clauses": ["RCV-1.2"]},
        "short_dated": {"item": p.gasket, "lot": lots[p.gasket], "clauses": ["RCV-1.3", "AP-2.3"]},
        "approved_substitute": {"item": "SEAL-020", "substitute": "ORING-02", "clauses": ["RCV-1.4"]},
        "unapproved_substitute": {"item": "SEAL-030", "substitute": "ORING-03", "clauses": ["RCV-1.4", "AP-2.3"]},
        "duplicate": {"vendor": name[ALLIED], "style": "dash dropped", "clauses": ["AP-1.3"]},
        "freight": {"vendor": name[KEYSTONE], "amount": FREIGHT, "clauses": ["AP-1.2"]},
    }
    truth.facts = {"requisitions": ids, "held_vendor": p.held_vendor}
    truth.expect = {
        "po_lines": [
            {"vendor": name[MIDSTATE], "item": p.rod, "qty": 550, "unit_price": p.rod_break_price,
             "at_risk": "no", "sent": "yes"},
            {"vendor": name[COASTLINE], "item": "SEAL-010", "qty": 600},
            {"vendor": name[TRICOUNTY], "item": "CAST-1-BODY", "need_by": cast_date, "at_risk": "yes"},
            {"vendor": name[COASTLINE], "item": p.gasket, "qty": gasket_qty},
            {"vendor": name[KEYSTONE], "item": "FAST-NUT", "qty": 2000, "need_by": NEED_THIS_WEEK},
        ],
        "po_vendors": [{"vendor": name[v]} for v in (MIDSTATE, TRICOUNTY, KEYSTONE, COASTLINE, ALLIED)],
        "receipt_lines": [
            # A refused quantity is keyed by the ordered item alone (item empty): projections.sql.
            {"vendor": name[KEYSTONE], "ordered_item": "FAST-NUT", "item": "FAST-NUT", "qty_received": 2000,
             "qty_refused": 0},
            {"vendor": name[KEYSTONE], "ordered_item": "FAST-NUT", "item": "", "qty_received": 0,
             "qty_refused": over_nuts, "refusal_reason": "over_shipment"},
            {"vendor": name[ALLIED], "ordered_item": "FIT-ELB-03", "item": "FIT-ELB-03", "qty_received": 203,
             "qty_refused": 0},
            {"vendor": name[COASTLINE], "ordered_item": p.gasket, "item": "", "qty_received": 0,
             "qty_refused": gasket_qty, "refusal_reason": "short_dated"},
            {"vendor": name[COASTLINE], "ordered_item": "SEAL-020", "item": "ORING-02", "qty_received": 500},
            {"vendor": name[COASTLINE], "ordered_item": "SEAL-030", "item": "", "qty_received": 0,
             "qty_refused": 500, "refusal_reason": "wrong_item"},
        ],
        "ap_invoices": [
            {"vendor": name[MIDSTATE], "status": "on_hold", "hold_reasons": "price"},
            {"vendor": name[COASTLINE], "status": "on_hold", "hold_reasons": "quantity"},
            {"vendor": name[KEYSTONE], "status": "on_hold", "hold_reasons": "quantity"},
            {"vendor": name[ALLIED], "status": "matched", "hold_reasons": ""},
        ],
        "ap_invoice_lines": [
            {"vendor": name[MIDSTATE], "kind": "item", "item": p.rod, "qty": 550, "unit_price": p.rod_base_price},
            {"vendor": name[KEYSTONE], "kind": "freight", "amount": FREIGHT},
            {"vendor": name[KEYSTONE], "kind": "item", "item": "FAST-NUT", "qty": 2000 + over_nuts},
        ],
    }
    truth.absent = {"po_vendors": [{"vendor": p.held_vendor_name}]}
    truth.values = {"midstate": "Mid-State", "coastline": "Coastline", "keystone": "Keystone"}
