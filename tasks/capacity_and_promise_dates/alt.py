"""capacity-and-promise-dates: the second, independent policy (issue 41, item 4), written from the
handbook alone.

It is mounted alone into `alt` cells, so it imports only the standard library and
`agent_sandbox`. It takes a route the handbook allows and the oracle does not:

- Its work orders are the ones whose note names a sales order entered today (the oracle: the
  planned orders opened today, matched to sales orders by item); their routing comes from the
  work order's item, their capacity from the load view (`/work-centers/load`, the free hours per
  centre and working day: so the calendar comes with it).
- It dispatches day by day instead of loading order by order: on each working day, each work
  centre takes the steps that are ready (the step before ended on an earlier day), the one with
  the most work left in its order first, and splits a step across days as capacity runs out.
- Write hygiene: no Idempotency-Keys. After a failed write it reads what the ERP holds (the work
  order's bookings, the order's promise) and sends again only when nothing was recorded (GEN-1.3).
- It promises each order as soon as its work order is fully booked, in the order they finish.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import send_checked

EPS = 1e-6
SO_IN_NOTE = re.compile(r"\bSO-\d+\b")


def _orders(client: ErpClient, today: str) -> list[dict[str, Any]]:
    """The work orders to schedule: planned, with a note naming a sales order entered today."""
    out = []
    for wo in client.list_all("/work-orders", status="planned"):
        m = SO_IN_NOTE.search(wo.get("note") or "")
        if not m:
            continue
        so = client.get(f"/sales-orders/{m.group(0)}")
        if so["order_date"] != today:
            continue
        routing = client.get(f"/items/{wo['item_id']}")["routing"]
        steps = [{"step": int(r["step"]), "wc": r["work_center_id"],
                  "left": round(float(r["setup_hours"]) + float(wo["qty"]) * float(r["hours_per_unit"]), 4)}
                 for r in sorted(routing, key=lambda r: int(r["step"]))]
        out.append({"wo": wo["id"], "so": so["id"], "steps": steps, "done_on": {}})
    return out


def _free(client: ErpClient, today: str) -> tuple[list[str], dict[tuple[str, str], float]]:
    """Working days ahead and the free hours per (centre, day), from the load view."""
    end = (dt.date.fromisoformat(today) + dt.timedelta(days=60)).isoformat()
    rows = client.get("/work-centers/load", date_from=today, date_to=end)
    days = sorted({r["day"] for r in rows})
    return days, {(r["work_center_id"], r["day"]): float(r["free_hours"]) for r in rows}


def _book(client: ErpClient, wo: str, step: int, day: str, hours: float) -> None:
    body = {"step": step, "day": day, "hours": hours}

    def recorded() -> Any:
        return [o for o in client.list_all("/wo-operations", wo_id=wo)
                if o["step"] == step and o["day"] == day and abs(o["hours"] - hours) < EPS]
    send_checked(client, "POST", f"/work-orders/{wo}/operations", body, recorded)


def _promise(client: ErpClient, so: str, day: str) -> None:
    def recorded() -> Any:
        got = client.get(f"/sales-orders/{so}/promise")
        return got if got.get("promise_date") == day else None
    send_checked(client, "POST", f"/sales-orders/{so}/promise", {"promise_date": day}, recorded)


def _ready(order: dict[str, Any], wc: str, day: str) -> dict[str, Any] | None:
    """The order's first unfinished step when it runs on `wc` and may run on `day` (SCH-1.4: the
    step before it ended on an earlier day)."""
    for n, s in enumerate(order["steps"]):
        if s["left"] > EPS:
            if s["wc"] != wc:
                return None
            before = order["steps"][n - 1] if n else None
            if before is not None and not order["done_on"].get(before["step"], "9999") < day:
                return None
            return s
    return None


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Dispatch the work orders day by day, then promise each the working day after its last."""
    today = context["date"]
    orders = _orders(client, today)
    days, free = _free(client, today)
    for i, day in enumerate(days):
        for wc in sorted({s["wc"] for o in orders for s in o["steps"]}):
            queue = sorted((o for o in orders if _ready(o, wc, day)),
                           key=lambda o: (-sum(s["left"] for s in o["steps"]), o["wo"]))
            for o in queue:
                s = _ready(o, wc, day)
                cap = free.get((wc, day), 0.0)
                if s is None or cap <= EPS:
                    continue
                take = round(min(cap, s["left"]), 4)
                _book(client, o["wo"], s["step"], day, take)
                free[(wc, day)] = round(cap - take, 4)
                s["left"] = round(s["left"] - take, 4)
                if s["left"] <= EPS:
                    o["done_on"][s["step"]] = day
        for o in orders:
            last = o["steps"][-1]
            if last["left"] <= EPS and o["done_on"].get(last["step"]) == day and i + 1 < len(days):
                _promise(client, o["so"], days[i + 1])
        if all(s["left"] <= EPS for o in orders for s in o["steps"]):
            break


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
