"""Plans read back as projections: their constraints and their objective (check type
`plan_feasible`; the projections' columns are in `tasks/checks/plan.py`).

A plan is feasible when it breaks none of: every job planned (all of the reference's jobs, each
with work or a finish day), its routing done in full on the right resource, capacity per
resource and day, the plant calendar, the order of a job's steps and between jobs, release days,
contract deadlines, and material (for each item, what the jobs started by a day draw is at most
what is on hand and received by that day). A plan that breaks a constraint fails whatever its
objective. The objective is the makespan in working days or the lateness penalty cost.
"""
from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from orchestrator.grading.projections import Table

EPS = 1e-6


@dataclass
class PlanEvaluation:
    """What one plan came to: its violations (by kind) and its objective."""

    violations: list[tuple[str, str]] = field(default_factory=list)
    objective: float | None = None
    jobs: int = 0

    @property
    def feasible(self) -> bool:
        """True when no constraint is broken."""
        return not self.violations

    def kinds(self) -> dict[str, int]:
        """Violations counted by kind."""
        out: dict[str, int] = defaultdict(int)
        for kind, _ in self.violations:
            out[kind] += 1
        return dict(sorted(out.items()))


def _day(value: str, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise ValueError(f"{what}: {value!r} is not a date") from None


def _num(value: str, what: str) -> float:
    try:
        x = float(value.replace(",", "").replace("$", "").strip())
    except ValueError:
        raise ValueError(f"{what}: {value!r} is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"{what}: {value!r} is not a finite number")
    return x


def _opt(row: dict[str, str], col: str) -> str | None:
    v = row.get(col)
    return v.strip() if v is not None and v.strip() else None


def _need(t: Table, cols: list[str], name: str) -> None:
    missing = [c for c in cols if c not in t.columns]
    if missing:
        raise LookupError(f"plan projection {name!r} has no column(s) {missing} (has {t.columns})")


@dataclass
class _Calendar:
    closed: set[dt.date]
    weekends_closed: bool

    def working(self, d: dt.date) -> bool:
        return d not in self.closed and not (self.weekends_closed and d.weekday() >= 5)

    def working_days(self, start: dt.date, end: dt.date) -> int:
        n, d = 0, start
        while d <= end:
            n += self.working(d)
            d += dt.timedelta(days=1)
        return n


def evaluate_plan(check: Any, plan: dict[str, Table], constraints: dict[str, Table] | None = None) -> PlanEvaluation:
    """Check one plan against `check`'s constraints and compute its objective.

    `plan` holds the projections read from the plan's database (the operations, and the jobs'
    `start`/`finish` and presence); `constraints` those the constraints are read from (default:
    the plan's own). The grader passes the reference's as constraints, so an agent that edits a
    work centre's capacity, the calendar or a due date does not move its own bar; a projection
    named in `check.agent_constraints` is read from the plan instead."""
    constraints = plan if constraints is None else constraints

    def source(name: str) -> Table:
        return plan[name] if name in check.agent_constraints else constraints[name]

    ev = PlanEvaluation()
    bad = ev.violations.append

    jobs_t, planned_t = source(check.jobs), plan[check.jobs]
    _need(jobs_t, ["job"], check.jobs)
    _need(planned_t, ["job"], check.jobs)
    jobs: dict[str, dict[str, str]] = {r["job"]: r for r in jobs_t.rows}
    planned: dict[str, dict[str, str]] = {}
    for r in planned_t.rows:
        if r["job"] in planned:
            bad(("duplicate_job", f"job {r['job']} appears twice in the plan"))
        planned[r["job"]] = r
    ev.jobs = len(jobs)
    for j in sorted(set(jobs) - set(planned)):
        bad(("missing_job", f"job {j} is not in the plan"))
    for j in sorted(set(planned) - set(jobs)):
        bad(("unknown_job", f"job {j} is not a job to plan"))

    cal = _Calendar(set(), check.weekends_closed)
    if check.closed_days:
        _need(source(check.closed_days), ["day"], check.closed_days)
        cal.closed = {_day(r["day"], "closed day") for r in source(check.closed_days).rows}

    # Operations: days worked per job and step; hours per resource and day.
    steps: dict[tuple[str, str], list[dt.date]] = defaultdict(list)
    done: dict[tuple[str, str, str], float] = defaultdict(float)
    load: dict[tuple[str, dt.date], float] = defaultdict(float)
    if check.operations:
        ops = plan[check.operations]
        _need(ops, ["job", "step", "resource", "day", "hours"], check.operations)
        for r in ops.rows:
            day = _day(r["day"], f"operation {r['job']}/{r['step']}")
            hours = _num(r["hours"], f"operation {r['job']}/{r['step']} hours")
            if hours <= EPS:
                bad(("bad_operation", f"{r['job']} step {r['step']} on {day}: {hours:g} hours"))
                continue
            if r["job"] not in jobs:
                bad(("unknown_job", f"work planned for {r['job']}, which is not a job to plan"))
            if not cal.working(day):
                bad(("calendar", f"{r['job']} step {r['step']} on {day}, a non-working day"))
            steps[(r["job"], r["step"])].append(day)
            done[(r["job"], r["step"], r["resource"])] += hours
            load[(r["resource"], day)] += hours

    if check.routing:
        rt = source(check.routing)
        _need(rt, ["job", "step", "resource", "hours"], check.routing)
        needed: dict[tuple[str, str, str], float] = defaultdict(float)
        for r in rt.rows:
            needed[(r["job"], r["step"], r["resource"])] += _num(r["hours"], f"routing {r['job']}/{r['step']}")
        for key in sorted(set(needed) | set(done)):
            want, got = needed.get(key, 0.0), done.get(key, 0.0)
            if abs(want - got) > 0.01:
                j, s, res = key
                what = "not in its routing" if key not in needed else f"{got:g} of {want:g} hours planned"
                bad(("routing", f"{j} step {s} on {res}: {what}"))

    if check.capacity:
        cap_t = source(check.capacity)
        _need(cap_t, ["resource", "hours"], check.capacity)
        daily: dict[str, float] = {}
        dated: dict[tuple[str, dt.date], float] = {}
        for r in cap_t.rows:
            hours = _num(r["hours"], f"capacity of {r['resource']}")
            d = _opt(r, "day")
            if d is None:
                daily[r["resource"]] = hours
            else:
                dated[(r["resource"], _day(d, f"capacity of {r['resource']}"))] = hours
        for (res, day), hours in sorted(load.items()):
            cap = dated.get((res, day), daily.get(res))
            if cap is None:
                bad(("capacity", f"{res} has no capacity (unknown resource), {hours:g} h planned on {day}"))
            elif hours > cap + EPS:
                bad(("capacity", f"{res} on {day}: {hours:g} h planned, capacity {cap:g} h"))

    # Each job's first and last day: from its operations, else its start/finish columns.
    first: dict[str, dt.date] = {}
    last: dict[str, dt.date] = {}
    for (j, _s), days in steps.items():
        first[j] = min([first[j], *days]) if j in first else min(days)
        last[j] = max([last[j], *days]) if j in last else max(days)
    for j in jobs:
        r = planned.get(j, {})
        if j not in last and _opt(r, "finish"):
            last[j] = _day(r["finish"], f"finish of {j}")
            first[j] = _day(_opt(r, "start") or r["finish"], f"start of {j}")
            if first[j] > last[j]:
                bad(("precedence", f"{j} starts {first[j]}, after its finish {last[j]}"))
        if j not in last and j in planned:
            bad(("unplanned", f"job {j} has no work planned and no finish day"))

    if check.operations:
        by_job: dict[str, list[tuple[str, list[dt.date]]]] = defaultdict(list)
        for (j, s), days in steps.items():
            by_job[j].append((s, days))
        for j, ss in by_job.items():
            ss.sort(key=lambda sd: _step_key(sd[0]))
            for (s1, d1), (s2, d2) in zip(ss, ss[1:], strict=False):
                if min(d2) < max(d1) + dt.timedelta(days=check.step_lag_days):
                    bad(("precedence", f"{j} step {s2} starts {min(d2)}, before step {s1} ends {max(d1)}"
                         + (f" + {check.step_lag_days} day(s)" if check.step_lag_days else "")))

    if check.precedence:
        pt = source(check.precedence)
        _need(pt, ["before", "after"], check.precedence)
        for r in pt.rows:
            b, a = r["before"], r["after"]
            if b in last and a in first and first[a] < last[b] + dt.timedelta(days=check.job_lag_days):
                bad(("precedence", f"{a} starts {first[a]}, before {b} finishes {last[b]}"
                     + (f" + {check.job_lag_days} day(s)" if check.job_lag_days else "")))

    for j, r in sorted(jobs.items()):
        rel, dl = _opt(r, "release"), _opt(r, "deadline")
        if rel and j in first and first[j] < _day(rel, f"release of {j}"):
            bad(("release", f"{j} starts {first[j]}, before its release {rel}"))
        if dl and j in last and last[j] > _day(dl, f"deadline of {j}"):
            bad(("deadline", f"{j} finishes {last[j]}, after its contract deadline {dl}"))

    if check.demands and check.supplies:
        _material(check, source(check.demands), source(check.supplies), first, bad)

    ev.objective = _objective(check, jobs, first, last, cal)
    return ev


def _step_key(step: str) -> tuple[float, str]:
    try:
        return (float(step), step)
    except ValueError:
        return (math.inf, step)


def _material(check: Any, dm: Table, sp: Table, first: dict[str, dt.date], bad: Any) -> None:
    _need(dm, ["job", "item", "qty"], check.demands)
    _need(sp, ["item", "day", "qty"], check.supplies)
    flows: dict[str, list[tuple[dt.date, float]]] = defaultdict(list)
    for r in sp.rows:
        flows[r["item"]].append((_day(r["day"], f"supply of {r['item']}"), _num(r["qty"], f"supply of {r['item']}")))
    for r in dm.rows:
        qty = _num(r["qty"], f"demand of {r['job']} for {r['item']}")
        if qty <= EPS:
            continue
        if r["job"] not in first:
            continue  # an unplanned job draws nothing; it is reported as unplanned
        flows[r["item"]].append((first[r["job"]], -qty))
    for item, moves in sorted(flows.items()):
        # Receipts of a day count before that day's draws.
        moves.sort(key=lambda m: (m[0], -m[1]))
        level = 0.0
        for day, qty in moves:
            level += qty
            if level < -EPS:
                bad(("material", f"{item} short by {-level:g} on {day}"))
                break


def _objective(check: Any, jobs: dict[str, dict[str, str]], first: dict[str, dt.date], last: dict[str, dt.date],
               cal: _Calendar) -> float | None:
    if check.objective == "penalty_cost":
        cost = 0.0
        for j, r in jobs.items():
            due, rate = _opt(r, "due"), _opt(r, "penalty_per_day")
            if j in last and due and rate:
                late = (last[j] - _day(due, f"due of {j}")).days
                cost += max(0, late) * _num(rate, f"penalty of {j}")
        return round(cost, 2)
    if not last:
        return None
    origin_text = check.start or min((r["release"] for r in jobs.values() if _opt(r, "release")), default=None)
    origin = _day(origin_text, "plan start") if origin_text else min(first.values())
    return float(cal.working_days(origin, max(last.values())))


def plan_gap(agent: float, reference: float) -> float:
    """The agent's objective's relative excess over the reference's (0 when equal or better)."""
    if reference <= EPS:
        return 0.0 if agent <= EPS else math.inf
    return max(0.0, (agent - reference) / reference)
