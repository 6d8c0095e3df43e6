"""Order to cash during history: a seeded stream of customer orders, order entry with the
ERP's credit check (the credit manager releases held orders the next workday), shipments of
whatever stock allows (the ERP picks first-expiry-first), a customer invoice per shipment, and
cash application once the customers' payments (the counterparty actor, by profile) arrive."""
from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict

from sqlalchemy import select

from erp_service.domains.receivables import cash_receipts
from erp_service.sim import sim_log

from .catalog import sellable
from .history import AR_CLERK, CREDIT, ORDER_ENTRY, SHIPPING, History, add_days, days

#: Orders per workday on average, and the first day orders come in after the opening.
ORDERS_PER_DAY = 0.32
FIRST_ORDER_AFTER_DAYS = 12
_VALVE_POPULARITY = [5, 9, 12, 10, 7, 4, 3, 2]


def plan_demand(h: History) -> None:
    """Draw the year's order stream from the seed and set the planners' weekly forecast."""
    rng = h.rng
    cat = h.ng.catalog
    sell = sellable(cat)
    valves = [i for i in sell if i.type == "finished"]
    fittings = [i for i in sell if i.id.startswith("FIT-")]
    gaskets = [i for i in sell if i.type == "gasket"]
    customers = h.ng.customers
    weights = [c.weight for c in customers]
    stream: dict[str, list[dict]] = defaultdict(list)
    first = add_days(h.start, FIRST_ORDER_AFTER_DAYS)
    totals: dict[str, float] = defaultdict(float)
    n = 0
    # The stream covers a full year whatever the history's end, so the forecast (and the orders
    # up to any given day) are the same for every task built on the same seed.
    horizon = max(h.end, add_days(h.start, 364))
    for day in days(first, horizon):
        if dt.date.fromisoformat(day).weekday() >= 5:
            continue
        count = sum(1 for _ in range(3) if rng.random() < ORDERS_PER_DAY / 3)
        for _ in range(count):
            cust = rng.choices(customers, weights)[0]
            dist = cust.kind == "distributor"
            lines: dict[str, float] = {}
            for _ in range(rng.choice([1, 2, 2, 3, 3, 4])):
                r = rng.random()
                if r < 0.62:
                    item = rng.choices(valves, _VALVE_POPULARITY)[0]
                    qty = rng.randint(8, 50) * 5 if dist else rng.randint(10, 60)
                elif r < 0.9:
                    item = rng.choice(fittings)
                    qty = rng.randint(6, 24) * 25 if dist else rng.randint(3, 15) * 10
                else:
                    item = rng.choice(gaskets)
                    qty = rng.randint(2, 6) * 10
                lines[item.id] = lines.get(item.id, 0) + qty
            n += 1
            stream[day].append({"customer": cust.id, "lines": lines, "po": f"{cust.id[2:]}-{rng.randint(1000, 9999)}",
                                "lead": rng.choice([3, 5, 7, 7, 10, 14])})
            for k, v in lines.items():
                totals[k] += v
    weeks = max(1.0, (dt.date.fromisoformat(horizon) - dt.date.fromisoformat(first)).days / 7)
    for k, v in totals.items():
        h.stock.weekly[k] = v / weeks
    h.stock.derive_usage()
    h.notes.update(order_stream=stream, open_orders={}, held={}, to_apply=[], applied_receipts=set())


def take_orders(h: History) -> None:
    """Enter today's orders; release yesterday's credit holds."""
    held = h.notes["held"]
    for so_id, since in sorted(held.items()):
        if since < h.today:
            h.call(CREDIT, "POST", f"/sales-orders/{so_id}/release",
                   {"note": "Customer in good standing; payment plan on file."})
            h.notes["open_orders"][so_id]["status"] = "released"
            del held[so_id]
    for o in h.notes["order_stream"].get(h.today, []):
        so = h.call(ORDER_ENTRY, "POST", "/sales-orders", {
            "customer_id": o["customer"], "customer_po": o["po"], "warehouse_id": "WH-MAIN",
            "requested_date": add_days(h.today, o["lead"]),
            "lines": [{"item_id": k, "qty": v} for k, v in o["lines"].items()]})
        h.notes["open_orders"][so["id"]] = {"status": so["status"], "requested": add_days(h.today, o["lead"]),
                                            "lines": {l["line_no"]: [l["item_id"], l["qty"]] for l in so["lines"]}}
        if so["status"] == "on_hold":
            held[so["id"]] = h.today


def ship(h: History) -> None:
    """Ship what stock covers on orders that are due; bill each shipment the same day. Lines
    wait for full stock until a week late, then ship what there is."""
    stock = h.stock
    for so_id in sorted(h.notes["open_orders"]):
        o = h.notes["open_orders"][so_id]
        if o["status"] == "on_hold" or o["requested"] > h.today:
            continue
        late = o["requested"] <= add_days(h.today, -7)
        send = []
        for line_no, (item, open_qty) in sorted(o["lines"].items()):
            have = stock.on_hand[item]
            qty = open_qty if have + 1e-9 >= open_qty else (float(int(have)) if late else 0.0)
            if qty > 0:
                send.append((line_no, item, qty))
        if not send:
            continue
        sh = h.call(SHIPPING, "POST", "/shipments", {"so_id": so_id, "carrier": h.rng.choice(["UPS Freight", "R+L", "Estes"]),
                                                     "lines": [{"line_no": n, "qty": q} for n, _, q in send]})
        for line_no, item, qty in send:
            stock.take(item, qty)
            o["lines"][line_no][1] = round(o["lines"][line_no][1] - qty, 4)
            if o["lines"][line_no][1] <= 1e-9:
                del o["lines"][line_no]
        h.call(SHIPPING, "POST", f"/shipments/{sh['id']}/invoice")
        if not o["lines"]:
            del h.notes["open_orders"][so_id]


def apply_cash(h: History) -> None:
    """Note the customer payments the bank posted today; apply what is due to be applied (the
    same day when the remittance names the invoice, a day or two later otherwise)."""
    conn = h.erp.db.conn
    with h.erp.db.transaction():
        paid = conn.execute(select(sim_log.c.ref, sim_log.c.payload).where(
            sim_log.c.kind == "customer_payment", sim_log.c.day == h.today).order_by(sim_log.c.id)).all()
        receipts = conn.execute(select(cash_receipts.c.id, cash_receipts.c.customer_id, cash_receipts.c.amount_cents,
                                       cash_receipts.c.reference)
                                .where(cash_receipts.c.receipt_date == h.today, cash_receipts.c.created_by == "sys-bank")
                                .order_by(cash_receipts.c.id)).all()
    fresh = [r for r in receipts if r.id not in h.notes["applied_receipts"]]
    if len(fresh) != len(paid):
        raise RuntimeError(f"{h.today}: {len(paid)} customer payments but {len(fresh)} bank receipts")
    for (invoice_id, payload), rc in zip(paid, fresh, strict=False):
        p = json.loads(payload)
        if p["amount_cents"] != rc.amount_cents or p["payer"] != rc.customer_id:
            raise RuntimeError(f"{h.today}: receipt {rc.id} does not match the payment of {invoice_id}")
        lag = 0 if rc.reference == invoice_id else h.rng.choice([1, 2, 3])
        h.notes["applied_receipts"].add(rc.id)
        h.notes["to_apply"].append((lag, rc.id, invoice_id, rc.amount_cents))
    keep = []
    for lag, rc_id, invoice_id, cents in h.notes["to_apply"]:
        if lag > 0:
            keep.append((lag - 1, rc_id, invoice_id, cents))
            continue
        h.call(AR_CLERK, "POST", f"/cash-receipts/{rc_id}/apply",
               {"applications": [{"invoice_id": invoice_id, "amount": cents / 100}]})
    h.notes["to_apply"] = keep
