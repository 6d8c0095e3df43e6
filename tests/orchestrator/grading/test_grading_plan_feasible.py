"""`plan_feasible` on plans written into real SQLite databases and read back through projections:
a feasible optimal plan, feasible plans within and beyond the gap, and a plan breaking each
constraint kind (which fails whatever its objective)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.grading.audit import AuditContext
from orchestrator.grading.checks import CHECKS, CheckContext, CheckOutcome
from orchestrator.grading.projections import run_projection
from tasks.checks import check_model

# The plant: two work centres of 8 h a day; Thursday 2026-11-05 is a holiday.
MON, TUE, WED, THU, FRI, SAT, NEXT_MON = (f"2026-11-{d:02d}" for d in (2, 3, 4, 5, 6, 7, 9))
ROUTING = [("WO-1", 10, "WC-MACH", 8), ("WO-1", 20, "WC-ASSY", 4),
           ("WO-2", 10, "WC-MACH", 8), ("WO-2", 20, "WC-ASSY", 8)]
JOBS = [("WO-1", MON, TUE, NEXT_MON, 100.0), ("WO-2", MON, WED, FRI, 50.0)]
# Optimal: three working days.
OPTIMAL = [("WO-1", 10, "WC-MACH", MON, 8), ("WO-1", 20, "WC-ASSY", TUE, 4),
           ("WO-2", 10, "WC-MACH", TUE, 8), ("WO-2", 20, "WC-ASSY", WED, 8)]
# Feasible but WO-2's last step waits until Friday: four working days (Thursday is closed).
SLOWER = OPTIMAL[:3] + [("WO-2", 20, "WC-ASSY", FRI, 8)]

PROJECTIONS = {
    "plan_jobs": "SELECT job, release, due, deadline, penalty_per_day FROM jobs",
    "plan_operations": "SELECT job, step, resource, day, hours FROM ops",
    "plan_routing": "SELECT job, step, resource, hours FROM routing",
    "plan_capacity": "SELECT id AS resource, hours FROM wc",
    "plan_closed": "SELECT day FROM holidays",
    "plan_precedence": "SELECT before, after FROM prec",
    "plan_demands": "SELECT job, item, qty FROM needs",
    "plan_supplies": "SELECT item, day, qty FROM stock",
}


def _db(path: Path, ops, *, jobs=JOBS, routing=ROUTING, prec=(), needs=(), stock=(), hours=8.0,
        holiday=THU) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE jobs (job TEXT, release TEXT, due TEXT, deadline TEXT, penalty_per_day REAL);
        CREATE TABLE ops (job TEXT, step INTEGER, resource TEXT, day TEXT, hours REAL);
        CREATE TABLE routing (job TEXT, step INTEGER, resource TEXT, hours REAL);
        CREATE TABLE wc (id TEXT, hours REAL);
        CREATE TABLE holidays (day TEXT);
        CREATE TABLE prec (before TEXT, after TEXT);
        CREATE TABLE needs (job TEXT, item TEXT, qty REAL);
        CREATE TABLE stock (item TEXT, day TEXT, qty REAL);
    """)
    conn.executemany("INSERT INTO jobs VALUES (?,?,?,?,?)", jobs)
    conn.executemany("INSERT INTO ops VALUES (?,?,?,?,?)", ops)
    conn.executemany("INSERT INTO routing VALUES (?,?,?,?)", routing)
    conn.executemany("INSERT INTO wc VALUES (?,?)", [("WC-MACH", hours), ("WC-ASSY", hours)])
    conn.execute("INSERT INTO holidays VALUES (?)", (holiday,))
    conn.executemany("INSERT INTO prec VALUES (?,?)", prec)
    conn.executemany("INSERT INTO needs VALUES (?,?,?)", needs)
    conn.executemany("INSERT INTO stock VALUES (?,?,?)", stock)
    conn.commit()
    conn.close()
    return path


def _tables(path: Path) -> dict:
    conn = sqlite3.connect(path)
    try:
        return {name: run_projection(conn, sql, {}) for name, sql in PROJECTIONS.items()}
    finally:
        conn.close()


def _audit(conn: sqlite3.Connection) -> AuditContext:
    return AuditContext(events=[], db=conn, agent_user="pat.planner", agent_token_id=None)


def _check(**over):
    spec = {"name": "schedule feasible", "type": "plan_feasible", "jobs": "plan_jobs",
            "operations": "plan_operations", "routing": "plan_routing", "capacity": "plan_capacity",
            "closed_days": "plan_closed", "precedence": "plan_precedence", "demands": "plan_demands",
            "supplies": "plan_supplies", "objective": "makespan", "max_gap": 0.0, **over}
    return check_model("plan_feasible")(**spec)


def _grade(tmp_path: Path, agent_ops, check=None, *, ref_ops=OPTIMAL, agent_db_edits=None, **db) -> CheckOutcome:
    """Grade `agent_ops` against `ref_ops`; `agent_db_edits` changes the agent's database only."""
    ref_db = _db(tmp_path / "ref.db", ref_ops, **db)
    agent_db = _db(tmp_path / "agent.db", agent_ops, **{**db, **(agent_db_edits or {})})
    conn = sqlite3.connect(agent_db)
    ctx = CheckContext(agent=_tables(agent_db), reference=_tables(ref_db), audit=_audit(conn), final_db=conn,
                       start_db=None, workspace=None, grading_date=NEXT_MON)
    try:
        return CHECKS["plan_feasible"](check or _check(), ctx)
    finally:
        conn.close()
        for p in (ref_db, agent_db):
            p.unlink()


def test_the_optimal_plan_passes_with_no_gap(tmp_path: Path) -> None:
    out = _grade(tmp_path, OPTIMAL)
    assert out.passed, out.detail
    assert out.data["agent_objective"] == out.data["reference_objective"] == 3.0
    assert out.data["gap"] == 0.0


def test_the_same_plan_written_in_another_order_and_split_across_days_passes(tmp_path: Path) -> None:
    # Rows in another order, and one step's hours written as two rows on the same day.
    split = [("WO-2", 20, "WC-ASSY", WED, 8), ("WO-1", 10, "WC-MACH", MON, 8), ("WO-2", 10, "WC-MACH", TUE, 3),
             ("WO-2", 10, "WC-MACH", TUE, 5), ("WO-1", 20, "WC-ASSY", TUE, 4)]
    out = _grade(tmp_path, split)
    assert out.passed, out.detail


def test_a_feasible_plan_within_the_gap_passes_and_beyond_it_fails(tmp_path: Path) -> None:
    within = _grade(tmp_path, SLOWER, _check(max_gap=0.34))
    assert within.passed, within.detail
    assert within.data["agent_objective"] == 4.0 and abs(within.data["gap"] - 1 / 3) < 1e-9
    beyond = _grade(tmp_path, SLOWER, _check(max_gap=0.25))
    assert not beyond.passed
    assert "beyond the allowed gap" in beyond.detail
    assert beyond.data["violations"] == {}
    # The gap may be declared absolutely too: one working day more than the reference passes.
    assert _grade(tmp_path, SLOWER, _check(max_excess=1)).passed
    assert not _grade(tmp_path, SLOWER, _check(max_excess=0.5)).passed


def test_makespan_counts_from_the_declared_start_else_the_earliest_release_else_the_first_day(tmp_path: Path) -> None:
    no_release = [(j, None, due, dl, rate) for j, _rel, due, dl, rate in JOBS]
    assert _grade(tmp_path, OPTIMAL, jobs=no_release).data["agent_objective"] == 3.0      # Mon..Wed
    out = _grade(tmp_path, OPTIMAL, _check(start="2026-10-30"), jobs=no_release)
    assert out.data["agent_objective"] == 4.0 and out.passed                  # Fri 30 Oct, Mon, Tue, Wed
    assert _grade(tmp_path, OPTIMAL).data["agent_objective"] == 3.0            # from the releases (Monday)


def test_a_plan_better_than_the_reference_passes(tmp_path: Path) -> None:
    out = _grade(tmp_path, OPTIMAL, ref_ops=SLOWER)
    assert out.passed, out.detail
    assert out.data["gap"] == 0.0


# Each plan breaks exactly one kind of constraint; each would be as short as the optimum or shorter.
BROKEN = {
    "capacity": [("WO-1", 10, "WC-MACH", MON, 8), ("WO-2", 10, "WC-MACH", MON, 8),
                 ("WO-1", 20, "WC-ASSY", TUE, 4), ("WO-2", 20, "WC-ASSY", TUE, 8)],
    "calendar (holiday)": OPTIMAL[:3] + [("WO-2", 20, "WC-ASSY", THU, 8)],
    "calendar (weekend)": OPTIMAL[:3] + [("WO-2", 20, "WC-ASSY", SAT, 8)],
    "precedence (steps)": [("WO-1", 10, "WC-MACH", TUE, 8), ("WO-1", 20, "WC-ASSY", MON, 4),
                           ("WO-2", 10, "WC-MACH", MON, 8), ("WO-2", 20, "WC-ASSY", TUE, 8)],
    "routing (hours short)": OPTIMAL[:3] + [("WO-2", 20, "WC-ASSY", WED, 4)],
    "routing (wrong work centre)": [("WO-1", 10, "WC-ASSY", MON, 8)] + OPTIMAL[1:],
    "unplanned job": OPTIMAL[:2],
}
KIND = {"capacity": "capacity", "calendar (holiday)": "calendar", "calendar (weekend)": "calendar",
        "precedence (steps)": "precedence", "routing (hours short)": "routing",
        "routing (wrong work centre)": "routing", "unplanned job": "unplanned"}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_plan_breaking_a_constraint_fails_whatever_its_objective(tmp_path: Path, case: str) -> None:
    # Even with any gap allowed: infeasible is a failure.
    out = _grade(tmp_path, BROKEN[case], _check(max_gap=100.0))
    assert not out.passed, out.detail
    assert out.detail.startswith("infeasible")
    assert KIND[case] in out.data["violations"], out.data


def test_precedence_between_jobs(tmp_path: Path) -> None:
    # WO-2 must follow WO-1 (its subassembly): WO-2 may start only once WO-1 has finished.
    after = [("WO-1", 10, "WC-MACH", MON, 8), ("WO-1", 20, "WC-ASSY", TUE, 4),
             ("WO-2", 10, "WC-MACH", TUE, 8), ("WO-2", 20, "WC-ASSY", WED, 8)]
    early = [("WO-2", 10, "WC-MACH", MON, 8), ("WO-1", 10, "WC-MACH", TUE, 8),
             ("WO-1", 20, "WC-ASSY", WED, 4), ("WO-2", 20, "WC-ASSY", WED, 4), ("WO-2", 20, "WC-ASSY", FRI, 4)]
    prec = [("WO-1", "WO-2")]
    assert _grade(tmp_path, after, prec=prec, ref_ops=after).passed
    out = _grade(tmp_path, early, _check(max_gap=100.0), prec=prec, ref_ops=after)
    assert not out.passed and out.data["violations"] == {"precedence": 1}, out.detail


def test_material_availability(tmp_path: Path) -> None:
    # WO-2 draws 10 castings on its start day; 6 are on hand and 4 arrive on Wednesday.
    needs, stock = [("WO-2", "CAST-1", 10)], [("CAST-1", MON, 6), ("CAST-1", WED, 4)]
    late_start = [("WO-1", 10, "WC-MACH", MON, 8), ("WO-1", 20, "WC-ASSY", TUE, 4),
                  ("WO-2", 10, "WC-MACH", WED, 8), ("WO-2", 20, "WC-ASSY", FRI, 8)]
    assert _grade(tmp_path, late_start, needs=needs, stock=stock, ref_ops=late_start).passed
    out = _grade(tmp_path, OPTIMAL, _check(max_gap=100.0), needs=needs, stock=stock, ref_ops=late_start)
    assert not out.passed and out.data["violations"] == {"material": 1}, out.detail
    assert "CAST-1 short by 4" in out.detail


def test_release_and_contract_deadline(tmp_path: Path) -> None:
    # WO-2 released only on Tuesday; its contract's last acceptable day is Wednesday.
    jobs = [JOBS[0], ("WO-2", TUE, WED, WED, 50.0)]
    assert _grade(tmp_path, OPTIMAL, jobs=jobs).passed
    early = [("WO-2", 10, "WC-MACH", MON, 8), ("WO-1", 10, "WC-MACH", TUE, 8),
             ("WO-2", 20, "WC-ASSY", TUE, 8), ("WO-1", 20, "WC-ASSY", WED, 4)]
    out = _grade(tmp_path, early, _check(max_gap=100.0), jobs=jobs)
    assert not out.passed and out.data["violations"] == {"release": 1}, out.detail
    out = _grade(tmp_path, SLOWER, _check(max_gap=100.0), jobs=jobs)
    assert not out.passed and out.data["violations"] == {"deadline": 1}, out.detail


def test_a_job_of_the_reference_missing_from_the_plan_fails(tmp_path: Path) -> None:
    # The agent cancelled WO-2 instead of planning it: its jobs projection no longer lists it.
    out = _grade(tmp_path, OPTIMAL[:2], _check(max_gap=100.0), agent_db_edits={"jobs": JOBS[:1]})
    assert not out.passed and "missing_job" in out.data["violations"], out.detail


def test_constraints_are_read_from_the_reference_not_the_agents_database(tmp_path: Path) -> None:
    # The agent doubled the capacity, moved the holiday and relaxed WO-2's deadline in its own
    # database: its plan is judged against the scenario's constraints all the same.
    edits = {"hours": 16.0, "holiday": SAT, "jobs": [JOBS[0], ("WO-2", MON, FRI, NEXT_MON, 50.0)]}
    out = _grade(tmp_path, BROKEN["capacity"], _check(max_gap=100.0), agent_db_edits=edits)
    assert not out.passed and out.data["violations"] == {"capacity": 2}, out.detail
    out = _grade(tmp_path, BROKEN["calendar (holiday)"], _check(max_gap=100.0), agent_db_edits=edits)
    assert not out.passed and out.data["violations"] == {"calendar": 1}, out.detail
    jobs = [JOBS[0], ("WO-2", MON, WED, WED, 50.0)]
    out = _grade(tmp_path, SLOWER, _check(max_gap=100.0), jobs=jobs,
                 agent_db_edits={"jobs": [JOBS[0], ("WO-2", MON, WED, FRI, 50.0)]})
    assert not out.passed and out.data["violations"] == {"deadline": 1}, out.detail


def test_a_constraint_the_task_lets_the_agent_change_is_read_from_its_database(tmp_path: Path) -> None:
    # The agent expedited the castings' receipt to Tuesday: with supplies declared as the agent's,
    # WO-2 may start on Tuesday; without, the reference's Wednesday receipt applies.
    needs = [("WO-2", "CAST-1", 10)]
    late_start = [("WO-1", 10, "WC-MACH", MON, 8), ("WO-1", 20, "WC-ASSY", TUE, 4),
                  ("WO-2", 10, "WC-MACH", WED, 8), ("WO-2", 20, "WC-ASSY", FRI, 8)]
    edits = {"stock": [("CAST-1", MON, 6), ("CAST-1", TUE, 4)]}
    kw = {"needs": needs, "stock": [("CAST-1", MON, 6), ("CAST-1", WED, 4)], "ref_ops": late_start,
          "agent_db_edits": edits}
    assert _grade(tmp_path, OPTIMAL, _check(agent_constraints=["plan_supplies"]), **kw).passed
    assert not _grade(tmp_path, OPTIMAL, _check(max_gap=100.0), **kw).passed
    with pytest.raises(ValidationError, match="not constraint projections"):
        _check(agent_constraints=["plan_operations"])


def test_work_for_a_job_outside_the_plan_or_a_job_twice_fails(tmp_path: Path) -> None:
    extra = OPTIMAL + [("WO-9", 10, "WC-MACH", WED, 2)]
    out = _grade(tmp_path, extra, _check(max_gap=100.0))
    assert not out.passed and "unknown_job" in out.data["violations"], out.detail
    twice = _grade(tmp_path, OPTIMAL, _check(max_gap=100.0), agent_db_edits={"jobs": JOBS + [JOBS[1]]})
    assert not twice.passed and twice.data["violations"] == {"duplicate_job": 1}, twice.detail


def test_penalty_cost_objective(tmp_path: Path) -> None:
    # Due Monday (100/day) and Tuesday (50/day): the optimal order costs 100 + 50 = 150; doing
    # WO-2 first finishes WO-1 on Wednesday (200) and WO-2 on Tuesday (0) = 200, a third worse.
    jobs = [("WO-1", MON, MON, NEXT_MON, 100.0), ("WO-2", MON, TUE, NEXT_MON, 50.0)]
    swapped = [("WO-2", 10, "WC-MACH", MON, 8), ("WO-1", 10, "WC-MACH", TUE, 8),
               ("WO-2", 20, "WC-ASSY", TUE, 8), ("WO-1", 20, "WC-ASSY", WED, 4)]
    best = _grade(tmp_path, OPTIMAL, _check(objective="penalty_cost"), jobs=jobs)
    assert best.passed and best.data["agent_objective"] == 150.0, best.detail
    worse = _grade(tmp_path, swapped, _check(objective="penalty_cost", max_gap=0.2), jobs=jobs)
    assert not worse.passed and worse.data["agent_objective"] == 200.0, worse.detail
    assert _grade(tmp_path, swapped, _check(objective="penalty_cost", max_gap=0.34), jobs=jobs).passed


def test_plans_without_operations_are_read_from_their_finish_days(tmp_path: Path) -> None:
    # An allocation plan: each order's ship day; material drawn on it; penalty for lateness.
    check = check_model("plan_feasible")(name="allocation", type="plan_feasible", jobs="plan_jobs",
                                         demands="plan_demands", supplies="plan_supplies",
                                         objective="penalty_cost")
    path = tmp_path / "alloc.db"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE orders (job TEXT, due TEXT, penalty_per_day REAL, ship TEXT);
        CREATE TABLE needs (job TEXT, item TEXT, qty REAL);
        CREATE TABLE stock (item TEXT, day TEXT, qty REAL);
        INSERT INTO needs VALUES ('SO-1', 'SEAL', 5), ('SO-2', 'SEAL', 5);
        INSERT INTO stock VALUES ('SEAL', '2026-11-02', 5), ('SEAL', '2026-11-09', 5);
    """)
    projections = {"plan_jobs": "SELECT job, due, penalty_per_day, ship AS finish FROM orders",
                   "plan_demands": "SELECT job, item, qty FROM needs",
                   "plan_supplies": "SELECT item, day, qty FROM stock"}

    def tables(rows):
        conn.execute("DELETE FROM orders")
        conn.executemany("INSERT INTO orders VALUES (?,?,?,?)", rows)
        return {n: run_projection(conn, s, {}) for n, s in projections.items()}

    ref = tables([("SO-1", MON, 10.0, MON), ("SO-2", MON, 1.0, NEXT_MON)])        # 7 days × 1
    both_now = tables([("SO-1", MON, 10.0, MON), ("SO-2", MON, 1.0, MON)])         # 10 seals on Monday
    wrong_way = tables([("SO-1", MON, 10.0, NEXT_MON), ("SO-2", MON, 1.0, MON)])   # 7 days × 10
    ctx = CheckContext(agent=both_now, reference=ref, audit=_audit(conn), final_db=conn, start_db=None,
                       workspace=None, grading_date=NEXT_MON)
    out = CHECKS["plan_feasible"](check, ctx)
    assert not out.passed and out.data["violations"] == {"material": 1}, out.detail
    ctx.agent = wrong_way
    out = CHECKS["plan_feasible"](check, ctx)
    assert not out.passed and out.data["agent_objective"] == 70.0 and out.data["reference_objective"] == 7.0
    ctx.agent = ref
    assert CHECKS["plan_feasible"](check, ctx).passed
    conn.close()


def test_an_infeasible_reference_is_a_task_bug(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="reference plan is not feasible"):
        _grade(tmp_path, OPTIMAL, ref_ops=BROKEN["capacity"])


def test_the_model_names_every_projection_and_refuses_half_declared_constraints() -> None:
    assert _check().projections == list(PROJECTIONS)
    model = check_model("plan_feasible")
    with pytest.raises(ValidationError, match="operations without capacity"):
        model(name="x", type="plan_feasible", jobs="j", operations="o", objective="makespan")
    with pytest.raises(ValidationError, match="both demands and supplies"):
        model(name="x", type="plan_feasible", jobs="j", demands="d", objective="makespan")
