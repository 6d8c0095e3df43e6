"""capacity-and-promise-dates: the oracle and the negative controls (docs/contracts.md §8).

Every policy plays the turn through the agent's API with the agent's token, reading only what
the agent can read: the ERP and the handbook in the workspace. Policies are mounted read-only
into their own cells' agent containers, so this module imports nothing but the standard library
and `agent_sandbox`.

The oracle reads the work orders named in the request, their routings (SCH-1.1), the work
centres' capacity (SCH-1.2) and the calendar (SCH-1.3); it loads the orders forward in every
order of the work orders — each step from the day after the step before it ends (SCH-1.4), into
the capacity left per centre and day — and books the order with the earliest last day (SCH-2.1;
ties: the earliest finishes summed, then the order itself). It then promises each sales order the
working day after its work order's last day (SCH-3.1). Writes carry deterministic
Idempotency-Keys; `neg:blind-retry` re-sends failed writes without one.
"""
from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import Writer

EPS = 1e-6
HORIZON_DAYS = 60


@dataclass
class Job:
    """One work order to schedule: its steps (step, work centre, hours) and its sales order."""

    wo: str
    item: str
    qty: float
    steps: list[tuple[int, str, float]]
    so: str | None = None
    requested: str | None = None


@dataclass
class Plant:
    """Today, the working days ahead, each centre's daily capacity and the jobs."""

    today: str
    workdays: list[str]
    capacity: dict[str, float]
    jobs: list[Job]
    booked: dict[tuple[str, str], float] = field(default_factory=dict)


def _next_days(client: ErpClient, today: str) -> list[str]:
    closed = {c["day"] for c in client.list_all("/calendar", date_from=today)}
    d0 = dt.date.fromisoformat(today)
    days = [(d0 + dt.timedelta(days=n)) for n in range(HORIZON_DAYS)]
    return [d.isoformat() for d in days if d.weekday() < 5 and d.isoformat() not in closed]


def read_plant(client: ErpClient, context: dict) -> Plant:
    """What the ERP says: the planned work orders opened today with their routing hours, the
    capacity, the calendar, and each work order's sales order (released today, same item)."""
    today = context["date"]
    jobs = []
    orders = [o for o in client.list_all("/sales-orders", status="released") if o["order_date"] == today]
    for wo in client.list_all("/work-orders", status="planned"):
        if wo["created_on"] != today:
            continue
        item = client.get(f"/items/{wo['item_id']}")
        steps = [(int(r["step"]), r["work_center_id"], round(r["setup_hours"] + wo["qty"] * r["hours_per_unit"], 4))
                 for r in sorted(item["routing"], key=lambda r: r["step"])]
        so = next((o for o in orders if any(line["item_id"] == wo["item_id"] for line in o["lines"])), None)
        jobs.append(Job(wo["id"], wo["item_id"], wo["qty"], steps, so["id"] if so else None,
                        so.get("requested_date") if so else None))
    capacity = {w["id"]: float(w["daily_capacity_hours"]) for w in client.list_all("/work-centers")}
    return Plant(today, _next_days(client, today), capacity, sorted(jobs, key=lambda j: j.wo))


Booking = tuple[str, int, str, str, float]      # (wo, step, centre, day, hours)


def load_forward(plant: Plant, order: list[Job], *, lag: int = 1, split: bool = True,
                 setup: bool = True) -> list[Booking]:
    """Load the jobs in `order`: each step from `lag` days after the step before it ends, into
    the hours left per centre and day (all on one day when `split` is false)."""
    left: dict[tuple[str, str], float] = {}
    out: list[Booking] = []
    for job in order:
        earliest = 0
        for step, wc, hours in job.steps:
            need = hours if setup else round(hours - _setup_of(job, step), 4)
            i = earliest
            last = earliest
            while need > EPS:
                if i >= len(plant.workdays):
                    raise RuntimeError(f"{job.wo} does not fit in {HORIZON_DAYS} days")
                day = plant.workdays[i]
                free = left.get((wc, day), plant.capacity[wc])
                take = min(free, need) if split else (need if free >= plant.capacity[wc] - EPS else 0.0)
                if take > EPS:
                    take = round(take, 4)
                    out.append((job.wo, step, wc, day, take))
                    left[(wc, day)] = round(free - take, 4)
                    need = round(need - take, 4)
                    last = i
                i += 1
            earliest = _after(plant, last, lag)
    return out


SETUPS: dict[tuple[str, int], float] = {}


def _setup_of(job: Job, step: int) -> float:
    return SETUPS.get((job.wo, step), 0.0)


def _after(plant: Plant, index: int, lag: int) -> int:
    """The index of the first working day at least `lag` calendar days after workdays[index]."""
    if lag <= 0:
        return index
    day = dt.date.fromisoformat(plant.workdays[index]) + dt.timedelta(days=lag)
    return next(i for i, d in enumerate(plant.workdays) if d >= day.isoformat())


def finish(bookings: list[Booking]) -> dict[str, str]:
    """Each work order's last booked day."""
    out: dict[str, str] = {}
    for wo, _s, _wc, day, _h in bookings:
        out[wo] = max(out.get(wo, day), day)
    return out


def best_plan(plant: Plant) -> list[Booking]:
    """The forward loading, over every order of the jobs, with the earliest last day."""
    best: tuple[Any, list[Booking]] | None = None
    for order in itertools.permutations(sorted(plant.jobs, key=lambda j: j.wo)):
        plan = load_forward(plant, list(order))
        ends = finish(plan)
        key = (max(ends.values()), sorted(ends.values()), [j.wo for j in order])
        if best is None or key < best[0]:
            best = (key, plan)
    assert best is not None
    return best[1]


def next_workday(plant: Plant, day: str) -> str:
    """The first working day after `day`."""
    return next(d for d in plant.workdays if d > day)


def book(w: Writer, bookings: list[Booking]) -> None:
    """One booking request per (work order, step, day)."""
    for wo, step, _wc, day, hours in bookings:
        w.post(f"/work-orders/{wo}/operations", {"step": step, "day": day, "hours": hours})


def promise(w: Writer, plant: Plant, bookings: list[Booking], *, requested: bool = False) -> None:
    """Promise each sales order the working day after its work order's last day (or, wrongly,
    the date the customer asked for)."""
    ends = finish(bookings)
    for job in plant.jobs:
        if job.so is None:
            continue
        day = job.requested if requested else next_workday(plant, ends[job.wo])
        if day:
            w.post(f"/sales-orders/{job.so}/promise", {"promise_date": day})


def _play(client: ErpClient, turn: int, context: dict, plan: Callable[[Plant], list[Booking]], *,
          keyed: bool = True, promises: str = "right") -> None:
    plant = read_plant(client, context)
    w = Writer(client, turn, "cpd", keyed=keyed)
    bookings = plan(plant)
    book(w, bookings)
    if promises != "none":
        promise(w, plant, bookings, requested=promises == "requested")


def oracle(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The schedule with the earliest last day, then the promises."""
    _play(client, turn, context, best_plan)


def neg_overbook(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Each step booked whole on its first possible day, ignoring what is already booked."""
    def plan(p: Plant) -> list[Booking]:
        out: list[Booking] = []
        for job in p.jobs:
            i = 0
            for step, wc, hours in job.steps:
                out.append((job.wo, step, wc, p.workdays[i], hours))
                i = _after(p, i, 1)
        return out
    _play(client, turn, context, plan)


def neg_steps_same_day(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Capacity kept, but a step may start on the day the step before it ends."""
    def plan(p: Plant) -> list[Booking]:
        best = None
        for order in itertools.permutations(sorted(p.jobs, key=lambda j: j.wo)):
            b = load_forward(p, list(order), lag=0)
            if best is None or max(finish(b).values()) < max(finish(best).values()):
                best = b
        assert best is not None
        return best
    _play(client, turn, context, plan)


def neg_no_setup(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Run hours only: the setup of every step left out."""
    def plan(p: Plant) -> list[Booking]:
        for job in p.jobs:
            item = client.get(f"/items/{job.item}")
            for r in item["routing"]:
                SETUPS[(job.wo, int(r["step"]))] = float(r["setup_hours"])
        return load_forward(p, sorted(p.jobs, key=lambda j: j.wo), setup=False)
    _play(client, turn, context, plan)


def neg_one_at_a_time(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """A feasible schedule that runs one work order at a time, each starting after the last ends."""
    def plan(p: Plant) -> list[Booking]:
        out: list[Booking] = []
        start = 0
        for job in sorted(p.jobs, key=lambda j: j.wo):
            sub = Plant(p.today, p.workdays[start:], p.capacity, [job])
            b = load_forward(sub, [job])
            out += b
            start = _after(p, p.workdays.index(max(d for _, _, _, d, _ in b)), 1)
        return out
    _play(client, turn, context, plan)


def neg_promise_requested(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The right schedule; each customer promised the date they asked for."""
    _play(client, turn, context, best_plan, promises="requested")


def neg_no_promises(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The right schedule; no promise given."""
    _play(client, turn, context, best_plan, promises="none")


def neg_set_lead_times(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The right schedule and promises, and each valve's lead time set to the working days its
    work order now takes (item records tidied to the schedule: master data changed, GEN-1.2)."""
    plant = read_plant(client, context)
    w = Writer(client, turn, "cpd")
    bookings = best_plan(plant)
    book(w, bookings)
    promise(w, plant, bookings)
    ends = finish(bookings)
    for job in plant.jobs:
        days = plant.workdays.index(ends[job.wo]) + 1
        w.patch(f"/items/{job.item}", {"lead_time_days": days})


def neg_blind_retry(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The oracle's work, re-sending a failed write once without a key."""
    _play(client, turn, context, best_plan, keyed=False)


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {
    "oracle": oracle,
    "neg:overbook": neg_overbook,
    "neg:steps_same_day": neg_steps_same_day,
    "neg:no_setup": neg_no_setup,
    "neg:one_at_a_time": neg_one_at_a_time,
    "neg:promise_requested": neg_promise_requested,
    "neg:no_promises": neg_no_promises,
    "neg:set_lead_times": neg_set_lead_times,
    "neg:blind-retry": neg_blind_retry,
}
