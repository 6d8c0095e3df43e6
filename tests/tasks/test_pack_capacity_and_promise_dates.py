"""capacity-and-promise-dates: the `promises` projection judges a promise against the agent's own
bookings (SCH-3.1: the first working day after the work order's last booked day), so any valid
schedule with promises consistent with it passes, and a promise off by a day, the customer's
requested date, a promise left stale after a booking moved, or none, fails."""
from __future__ import annotations

import sqlite3

import pytest
from erp_supply_support import supply_company

from erp_service.domains.manufacturing import work_orders
from erp_service.domains.org import calendar
from erp_service.domains.planning.schedule import enable_scheduling, so_promises, wo_operations
from erp_service.domains.sales.tables import sales_orders, so_lines
from orchestrator.grading.projections import run_projection
from tasks.registry import load_task

START = "2026-10-12"           # Monday; Thursday the 15th is a plant shutdown
LAST_DAYS = {"friday": "2026-10-16", "wednesday": "2026-10-14"}


def _db(tmp_path, *, bookings, promise, cancelled=()):
    c = supply_company(tmp_path)
    b = c.builder
    b.insert(calendar, day="2026-10-15", kind="plant_shutdown", note="boiler inspection")
    b.insert(sales_orders, id="SO-1", status="released", created_by="marco.rossi", created_on=START,
             customer_id="C-1", order_date=START, requested_date="2026-10-19")
    b.insert(so_lines, so_id="SO-1", line_no=1, item_id="VB-1000", qty=10, unit_price=50.0)
    b.insert(work_orders, id="WO-1", status="planned", created_by="ines.costa", created_on=START, item_id="VB-1000",
             qty=10, qty_completed=0, warehouse_id="WH-MAIN", due_date="2026-10-19", bom_date=START)
    with b.db.transaction() as conn:
        enable_scheduling(conn)
        for n, (day, status) in enumerate([(d, "scheduled") for d in bookings] + [(d, "cancelled") for d in cancelled]):
            conn.execute(wo_operations.insert().values(id=f"OPR-{n}", status=status, created_by="jordan.lee",
                                                       created_on=START, wo_id="WO-1", step=1 + n,
                                                       work_center_id="WC-ASSY", day=day, hours=1.0))
        if promise:
            conn.execute(so_promises.insert().values(so_id="SO-1", promise_date=promise, promised_by="jordan.lee",
                                                     promised_on=START))
    return c.path


def _promises(path) -> dict[str, str]:
    sql = load_task("capacity-and-promise-dates").projections["promises"]
    conn = sqlite3.connect(path)
    try:
        rows = run_projection(conn, sql, {"start": START}).rows
    finally:
        conn.close()
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize(("bookings", "promise", "cancelled", "promised", "ok"), [
    # Right: the first working day after the last booking, over a weekend or over the shutdown.
    (["2026-10-12", LAST_DAYS["friday"]], "2026-10-19", (), "1", "1"),
    (["2026-10-12", LAST_DAYS["wednesday"]], "2026-10-16", (), "1", "1"),
    # A cancelled booking later than the live ones does not count.
    (["2026-10-12", LAST_DAYS["wednesday"]], "2026-10-16", ("2026-10-20",), "1", "1"),
    # Wrong: the shutdown day, the last day itself, a day late, the customer's requested date.
    (["2026-10-12", LAST_DAYS["wednesday"]], "2026-10-15", (), "1", "0"),
    (["2026-10-12", LAST_DAYS["wednesday"]], LAST_DAYS["wednesday"], (), "1", "0"),
    (["2026-10-12", LAST_DAYS["friday"]], "2026-10-20", (), "1", "0"),
    (["2026-10-12", "2026-10-13"], "2026-10-19", (), "1", "0"),
    # Stale: the promise was right for a booking since cancelled and moved later.
    (["2026-10-12", "2026-10-20"], "2026-10-16", ("2026-10-14",), "1", "0"),
    # None given, or nothing booked.
    (["2026-10-12", LAST_DAYS["friday"]], None, (), "0", "0"),
    ([], "2026-10-19", (), "1", "0"),
])
def test_a_promise_is_judged_against_the_agents_own_bookings(tmp_path, bookings, promise, cancelled, promised, ok):
    row = _promises(_db(tmp_path, bookings=bookings, promise=promise, cancelled=cancelled))
    assert (row["so"], row["wo"]) == ("SO-1", "WO-1")
    assert (row["promised"], row["promise_ok"]) == (promised, ok), row
