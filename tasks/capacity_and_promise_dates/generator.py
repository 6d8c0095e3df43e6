"""capacity-and-promise-dates (D4): the generator, `generate(ctx)` (docs/pack-authoring.md).

Northgate on Monday 12 October 2026, history to Friday 9 October. Planted:
- a plant shutdown on Thursday 15 October (company calendar, kind plant_shutdown);
- five rush sales orders entered on Monday, one finished valve each, from five customers whose
  credit passes, each asking for delivery a week out (earlier than the plant can build some);
- one planned work order per sales order, opened by the production supervisor for the same item
  and quantity. Every finished valve runs machining → assembly → pressure test, so the five
  orders compete for the same three work centres over about a week and a half;
- finite scheduling and order promising switched on for this company (the two feature tables;
  the planner holds `wo.schedule`, `wo.unschedule` and `so.promise`).
"""
from __future__ import annotations

import datetime as dt

from erp_service.domains import org
from erp_service.domains.planning.schedule import enable_scheduling
from erp_service.kernel.tx import Tx
from tasks.context import GeneratorContext
from tasks.packs import GenerationError

HISTORY_END = "2026-10-09"
SHUTDOWN = ("2026-10-15", "Boiler inspection: the plant is closed")
ORDER_ENTRY, SUPERVISOR = "marco.rossi", "ines.costa"
ORDERS = 5
QUANTITIES = (60, 70, 80, 90, 100, 110, 120, 130, 140)
REQUESTED_AFTER_DAYS = 7


def _add(day: str, n: int) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=n)).isoformat()


def generate(ctx: GeneratorContext) -> None:
    """Build the scenario (see the module docstring)."""
    ng = ctx.northgate(history_end=HISTORY_END)
    start = ctx.start_date
    # The rush orders and their work orders are entered on Monday morning itself.
    ctx.builder.set_date(start)
    ctx.builder.insert(org.calendar, day=SHUTDOWN[0], kind="plant_shutdown", note=SHUTDOWN[1])

    def enable(tx: Tx) -> None:
        enable_scheduling(tx.conn)
    ctx.builder.run("alex.morgan", enable)

    finished = sorted(i.id for i in ng.catalog.items if i.type == "finished")
    items = ctx.rng.sample(finished, ORDERS)
    customers = [c.id for c in ng.customers if not c.parent]
    ctx.rng.shuffle(customers)
    requested = _add(start, REQUESTED_AFTER_DAYS)
    planted = []
    for item_id in items:
        qty = ctx.rng.choice(QUANTITIES)
        so = None
        while customers:
            customer = customers.pop()
            so = ctx.erp.post(ORDER_ENTRY, "/sales-orders", {
                "customer_id": customer, "requested_date": requested, "customer_po": f"RUSH-{item_id}",
                "lines": [{"item_id": item_id, "qty": qty}]})
            if so["status"] == "released":
                break
            # Credit would hold it: take it back and ask the next customer (the order stays cancelled).
            ctx.erp.post(ORDER_ENTRY, f"/sales-orders/{so['id']}/cancel", {"note": "entered for the wrong account"})
            so = None
        if so is None:
            raise GenerationError("no customer with the credit for a rush order is left")
        wo = ctx.erp.post(SUPERVISOR, "/work-orders", {"item_id": item_id, "qty": qty, "due_date": requested,
                                                      "note": f"Rush build for sales order {so['id']}"})
        planted.append({"so": so["id"], "wo": wo["id"], "item": item_id, "qty": qty, "customer": so["customer_id"]})

    turn = ctx.turns[0]
    turn.request = (turn.request.replace("WORK_ORDERS", ", ".join(p["wo"] for p in planted))
                    .replace("SALES_ORDERS", ", ".join(p["so"] for p in planted)))
    ctx.truth.planted = {"rush_orders": {p["so"]: p for p in planted},
                         "shutdown": {"day": SHUTDOWN[0], "note": SHUTDOWN[1]}}
    ctx.truth.expect = {"promises": [{"so": p["so"], "wo": p["wo"], "promised": "1", "promise_ok": "1"}
                                     for p in planted],
                        "plan_jobs": [{"job": p["wo"]} for p in planted]}
    ctx.truth.facts = {"requested_date": requested}
