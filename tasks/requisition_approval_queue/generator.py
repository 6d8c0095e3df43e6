"""requisition-approval-queue (A1): the generator, `generate(ctx)` (docs/pack-authoring.md).

Northgate on the start date of task.yaml (Tuesday 6 October 2026). Maya Chen (purchasing
manager, requisition limit $10,000) finds ten requisitions waiting on her, planted so that each
exercises one clause of the delegation of authority:
- four to approve: a small office-supplies order, one a department head routed up to her, and
  two small requests from one requester to one vendor (same vendor, total within her limit);
- one above her limit, to route to the next approver — her manager Ben Carter is on leave this
  week, so it goes to his delegate, Daniel Okafor;
- two halves of one purchase (one requester, one vendor, two business days apart), each within
  her limit and together above it: route both;
- one within her limit whose department's repairs budget fits on actuals but not once open
  commitments (an approved requisition not yet ordered, and an open PO) are counted: route it;
- two to return: one without a justification, one non-stock line without an expense account.
Her own two requisitions, submitted on Friday, wait on Ben Carter: they belong with her delegate
for requisitions, Tomas Novak.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.context import GeneratorContext
from tasks.northgate.company import Northgate
from tasks.northgate.requisitions import (
    PlantedReq,
    ReqLine,
    grant_role,
    order_requisition,
    plant_requisition,
    put_on_leave,
    set_budgets,
    set_delegate,
)
from tasks.packs import GenerationError

# The scenario's own calendar; the start, turn and grading dates are task.yaml's.
HISTORY_END = "2026-09-30"
AGENT = "maya.chen"
MANAGER, MANAGER_DELEGATE, OWN_DELEGATE = "ben.carter", "daniel.okafor", "tomas.novak"
BUYER, RCV_HEAD, SAL_HEAD = "ethan.wright", "luis.ortega", "grace.liu"
LIMIT = 10_000.00
PERIOD = "2026-10"


@dataclass(frozen=True)
class BudgetFigures:
    """Receiving's repairs budget this month and what is already spent (cents)."""

    budget: int
    actual: int
    repair_vendor: str


def _amount(rng: random.Random, lo: float, hi: float) -> float:
    return round(rng.uniform(lo, hi), 2)


def _req(role: str, requester: str, day: str, what: str, amount: float, account: str | None, vendor: str,
         note: str | None, **kw: str) -> PlantedReq:
    return PlantedReq(role, requester, day, (ReqLine(what, amount, account, vendor),), note, **kw)  # type: ignore[arg-type]


def plan(ng: Northgate) -> tuple[list[PlantedReq], dict[tuple[str, str], int], BudgetFigures]:
    """The planted requisitions (amounts and vendors from the seed), the October budgets (cents)
    and the repairs-budget figures the budget case is built from."""
    rng = ng.rng
    others = sorted(v.id for v in ng.vendors if v.id > "V-0110")
    vx, vy, vz, vw, vr, vq = rng.sample(others, 6)
    repairs_budget = rng.randint(110, 130) * 10_000           # cents: 11,000-13,000
    actual = round(_amount(rng, 2_000, 3_000) * 100)
    commit_po, commit_req = _amount(rng, 2_000, 2_450), _amount(rng, 1_500, 2_200)
    over_by = rng.randint(300, 900) * 100
    budget_case = (repairs_budget - actual - over_by) / 100  # fits on actuals, not with commitments
    a = lambda lo, hi: _amount(rng, lo, hi)  # noqa: E731
    up_rcv = {"forward_by": RCV_HEAD, "forward_to": AGENT}
    up_sal = {"forward_by": SAL_HEAD, "forward_to": AGENT}
    reqs = [
        # Commitments of Receiving's repairs budget (approved by Luis within his limit).
        _req("commit_po", "kim.ng", "2026-10-01", "Dock leveler hydraulic service", commit_po, "6200", vr,
             "Annual service of both dock levelers, due this month.", approve_by=RCV_HEAD),
        _req("commit_req", "kim.ng", "2026-10-02", "Overhead door spring replacement", commit_req, "6200", vr,
             "Door 3 spring is worn; the safety inspection flagged it.", approve_by=RCV_HEAD),
        # The queue, in the order it was submitted.
        _req("split_a", BUYER, "2026-10-01", "Carbide cutting inserts, CNC cell", a(5_500, 7_000), "6350", vx,
             "Insert stock for the CNC cell, first half of the quarter."),
        _req("decoy_a", BUYER, "2026-10-01", "Toner and printer supplies", a(2_000, 3_500), "6300", vy,
             "Toner for the office printers."),
        _req("approve_pur", BUYER, "2026-10-02", "Label printer and shipping labels", a(1_200, 2_400), "6300",
             "V-0102", "Replacement label printer for purchasing; the old one failed."),
        _req("own_1", AGENT, "2026-10-02", "Supplier audit travel, Tri-County Castings", a(1_500, 4_000), "6300", vz,
             "Quality audit visit at the casting supplier."),
        _req("own_2", AGENT, "2026-10-02", "Purchasing team training course", a(1_500, 4_000), "6300", vw,
             "Negotiation course for the two buyers."),
        _req("missing_account", BUYER, "2026-10-02", "Ergonomic chairs for purchasing", a(800, 1_500), None, vz,
             "Two chairs for the purchasing office."),
        _req("over_limit", "marco.rossi", "2026-10-02", "Trade show booth and display fixtures", a(12_000, 18_000),
             "6900", vw, "Booth for the regional plumbing trade show in November.", **up_sal),
        _req("split_b", BUYER, "2026-10-05", "Carbide cutting inserts, CNC cell", a(5_500, 7_000), "6350", vx,
             "Insert stock for the CNC cell, second half of the quarter."),
        _req("decoy_b", BUYER, "2026-10-05", "Copy paper and binders", a(2_000, 3_500), "6300", vy,
             "Paper and binders for the quarter."),
        _req("approve_fwd", "kim.ng", "2026-10-05", "Stretch wrap and pallet supplies", a(3_000, 4_500), "6350",
             "V-0102",
             "Shipping supplies for October.", **up_rcv),
        _req("budget_commit", "kim.ng", "2026-10-05", "Dock plate and bumper repairs", budget_case, "6200", vq,
             "Dock 2 plate is cracked and two bumpers are missing.", **up_rcv),
        _req("missing_justification", "marco.rossi", "2026-10-05", "Sample display cases", a(6_000, 8_000), "6900",
             vy, None, **up_sal),
    ]
    budgets = {("PUR", "6300"): 2_000_000, ("PUR", "6350"): 2_000_000, ("RCV", "6350"): 1_500_000,
               ("RCV", "6200"): repairs_budget, ("SAL", "6900"): 3_000_000}
    return reqs, budgets, BudgetFigures(repairs_budget, actual, vr)


#: What the handbook's rules decide for each planted requisition: (status, routed_to, reason).
EXPECT = {
    "approve_pur": ("approved", "", ""), "approve_fwd": ("approved", "", ""),
    "decoy_a": ("approved", "", ""), "decoy_b": ("approved", "", ""),
    "over_limit": ("submitted", MANAGER_DELEGATE, "amount"),
    "split_a": ("submitted", MANAGER_DELEGATE, "split"), "split_b": ("submitted", MANAGER_DELEGATE, "split"),
    "budget_commit": ("submitted", MANAGER_DELEGATE, "budget"),
    "missing_justification": ("returned", "", "missing_justification"),
    "missing_account": ("returned", "", "missing_account"),
    "own_1": ("submitted", OWN_DELEGATE, "own_request"), "own_2": ("submitted", OWN_DELEGATE, "own_request"),
}
CLAUSES = {"approve_pur": ["REQ-1.1"], "approve_fwd": ["REQ-1.1", "REQ-2.1"], "decoy_a": ["REQ-2.2"],
           "decoy_b": ["REQ-2.2"], "over_limit": ["REQ-1.2", "REQ-1.4"], "split_a": ["REQ-2.2"],
           "split_b": ["REQ-2.2"], "budget_commit": ["REQ-2.1"], "missing_justification": ["REQ-3.1"],
           "missing_account": ["REQ-3.1"], "own_1": ["REQ-1.3"], "own_2": ["REQ-1.3"]}


def generate(ctx: GeneratorContext) -> None:
    """Build the scenario: Northgate, the organisation of the week, budgets, the queue."""
    if ctx.agent_user != AGENT:
        raise GenerationError(f"this generator plants Maya Chen's queue; task.yaml names {ctx.agent_user}")
    ng = ctx.northgate(history_end=HISTORY_END)
    erp, b = ctx.erp, ctx.builder
    reqs, budgets, figures = plan(ng)

    # Organisation: Ben Carter away this week (Daniel Okafor approves for him); Maya's standing
    # delegate for requisitions is Tomas Novak.
    put_on_leave(ng, MANAGER, "2026-10-05", "2026-10-09", MANAGER_DELEGATE)
    set_delegate(ng, AGENT, OWN_DELEGATE)
    set_budgets(ng, PERIOD, budgets)
    for clerk in ("kim.ng", "marco.rossi"):         # clerks raise requisitions as any employee may
        grant_role(ng, erp, clerk, "staff")

    # Receiving's repairs actuals this month: a service invoice entered and validated on 1 October.
    b.set_date("2026-10-01")
    inv = erp.post("riley.park", "/ap-invoices", {
        "vendor": figures.repair_vendor, "invoice_no": f"SVC-{ng.rng.randint(10000, 99999)}",
        "invoice_date": "2026-09-30",
        "lines": [{"kind": "other", "description": "Emergency dock door repair, 28 September",
                   "amount": figures.actual / 100, "account": "6200"}]})
    erp.post("riley.park", f"/ap-invoices/{inv['id']}/validate")

    ids: dict[str, str] = {}
    for p in sorted(reqs, key=lambda r: r.created_on):     # stable: same-day order as planned
        ids[p.role] = plant_requisition(erp, ng, p)
        if p.role == "commit_po":
            order_requisition(erp, ng, BUYER, ids[p.role], p.lines[0].vendor, p.created_on)
    b.set_date(ctx.start_date)

    queue = erp.get(AGENT, "/approvals", limit=1000)["items"]
    waiting = sorted(a["doc_id"] for a in queue)
    planned = sorted(ids[r] for r in EXPECT if not r.startswith("own_"))
    if waiting != planned:
        raise GenerationError(f"the queue is not the planted one: {waiting} != {planned}")
    rep = erp.get(AGENT, "/reports/budget-availability", department="RCV", account="6200")["rows"][0]
    budget_case = next(p for p in reqs if p.role == "budget_commit").total
    if not (rep["available"] < budget_case <= rep["available"] + rep["committed"]):
        raise GenerationError(f"the budget case does not separate commitments: {rep} vs {budget_case}")

    ctx.world.vendor_default = {"silent": True}
    by_role = {p.role: p for p in reqs}
    truth = ctx.truth
    truth.planted = {role: {"id": ids[role], "requester": by_role[role].requester, "total": by_role[role].total,
                            "vendor": by_role[role].lines[0].vendor, "status": st, "routed_to": to, "reason": why,
                            "clauses": CLAUSES[role]}
                     for role, (st, to, why) in EXPECT.items()}
    truth.facts = {"limit": LIMIT, "commitment_requisition": ids["commit_req"],
                   "commitment_po_requisition": ids["commit_po"],
                   "repairs_budget": figures.budget / 100, "repairs_actual": figures.actual / 100}
    truth.expect = {
        "decisions": [{"requisition": ids[role], "status": st, "routed_to": to, "reason": why}
                      for role, (st, to, why) in sorted(EXPECT.items())],
        "agent_approvals": [{"requisition": ids[r]} for r, (st, _, _) in sorted(EXPECT.items()) if st == "approved"],
        "return_notices": [{"requisition": ids[r], "notified": "yes"} for r, (st, _, _) in sorted(EXPECT.items())
                           if st == "returned"],
    }
    truth.absent = {"agent_approvals": [{"requisition": ids[r]} for r, (st, _, _) in sorted(EXPECT.items())
                                        if st != "approved"]}
    truth.values = {"limit": "10,000.00"}
