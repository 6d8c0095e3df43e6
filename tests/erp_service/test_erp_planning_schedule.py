"""Finite scheduling and order promising (erp_service/domains/planning/schedule.py): the booking
lifecycle, the work order's dates following its bookings, the hard controls as probes (each
refused, audited and leaving the objects as they were), idempotent retries, roles, the load view,
and a company without the feature."""
from __future__ import annotations

import pytest
from erp_finance_support import assert_refused_and_unchanged, client, ok, refused
from erp_supply_support import supply_company

from erp_service.domains.masterdata import routings, work_centers
from erp_service.domains.org import calendar
from erp_service.domains.planning.schedule import enable_scheduling
from erp_service.domains.sales.tables import sales_orders

# The company's business date is Thursday 2026-10-08; Monday 12 October is a plant holiday.
HOLIDAY, FRI, TUE, SAT = "2026-10-12", "2026-10-09", "2026-10-13", "2026-10-10"


def _plant(c, *, enable: bool = True) -> None:
    b = c.builder
    b.insert(work_centers, id="WC-TEST", name="Test", daily_capacity_hours=8)
    b.insert_many(routings, [{"item_id": "VB-1000", "step": 1, "work_center_id": "WC-ASSY", "setup_hours": 0.5,
                              "hours_per_unit": 0.5},
                             {"item_id": "VB-1000", "step": 2, "work_center_id": "WC-TEST", "setup_hours": 0.5,
                              "hours_per_unit": 0.1}])
    b.insert(calendar, day=HOLIDAY, kind="holiday", note="plant shutdown")
    for so_id, status in (("SO-1", "entered"), ("SO-2", "shipped")):
        b.insert(sales_orders, id=so_id, status=status, created_by="order_entry", created_on="2026-10-01",
                 customer_id="C-1", order_date="2026-10-01", requested_date="2026-10-15")
    if enable:
        with b.db.transaction() as conn:
            enable_scheduling(conn)


@pytest.fixture()
def company(tmp_path):
    c = supply_company(tmp_path)
    _plant(c)
    return c


def _wo(cl, c, qty=10):
    return ok(cl.post("/work-orders", json={"item_id": "VB-1000", "qty": qty, "due_date": "2026-10-30"},
                      headers=c.headers("planner")))


def test_bookings_date_the_work_order_and_show_in_the_load(company):
    c, cl = company, client(company)
    h = c.headers("planner")
    wo = _wo(cl, c)
    a = ok(cl.post(f"/work-orders/{wo['id']}/operations", json={"step": 1, "day": FRI, "hours": 5.5}, headers=h))
    assert a["status"] == "scheduled" and a["work_center_id"] == "WC-ASSY" and a["hours"] == 5.5
    b = ok(cl.post(f"/work-orders/{wo['id']}/operations", json={"step": 2, "day": TUE, "hours": 1.5}, headers=h))
    got = ok(cl.get(f"/work-orders/{wo['id']}", headers=h), 200)
    assert (got["start_date"], got["due_date"]) == (FRI, TUE)
    load = ok(cl.get("/work-centers/load", params={"date_from": FRI, "date_to": TUE}, headers=h), 200)
    days = {(r["work_center_id"], r["day"]): r for r in load}
    assert days[("WC-ASSY", FRI)]["booked_hours"] == 5.5 and days[("WC-ASSY", FRI)]["free_hours"] == 10.5
    assert ("WC-ASSY", HOLIDAY) not in days and ("WC-ASSY", SAT) not in days     # working days only
    cancelled = ok(cl.post(f"/wo-operations/{b['id']}/cancel", json={"note": "moved"}, headers=h))
    assert cancelled["status"] == "cancelled"
    got = ok(cl.get(f"/work-orders/{wo['id']}", headers=h), 200)
    assert (got["start_date"], got["due_date"]) == (FRI, FRI)
    listed = ok(cl.get("/wo-operations", params={"wo_id": wo["id"]}, headers=h), 200)
    assert [o["id"] for o in listed["items"]] == [a["id"]]
    refused(cl.post(f"/wo-operations/{b['id']}/cancel", headers=h), "bad_status")


def test_hard_controls_refuse_and_change_nothing(company):
    c, cl = company, client(company)
    wo = _wo(cl, c)
    path = f"/work-orders/{wo['id']}/operations"
    images = [("work_order", wo["id"])]
    for body, code in (({"step": 1, "day": HOLIDAY, "hours": 2}, "non_working_day"),
                       ({"step": 1, "day": SAT, "hours": 2}, "non_working_day"),
                       ({"step": 1, "day": "2026-10-07", "hours": 2}, "date_in_past"),
                       ({"step": 3, "day": FRI, "hours": 2}, "not_in_routing")):
        assert_refused_and_unchanged(c, cl, "POST", path, "planner", code, images, body=body)
    ok(cl.post(f"/work-orders/{wo['id']}/cancel", headers=c.headers("production_supervisor")))
    assert_refused_and_unchanged(c, cl, "POST", path, "planner", "not_schedulable", images,
                                 body={"step": 1, "day": FRI, "hours": 2})
    assert_refused_and_unchanged(c, cl, "POST", "/sales-orders/SO-2/promise", "planner", "order_not_open",
                                 [("so_promise", "SO-2")], body={"promise_date": TUE})
    assert_refused_and_unchanged(c, cl, "POST", "/sales-orders/SO-1/promise", "planner", "non_working_day",
                                 [("so_promise", "SO-1")], body={"promise_date": HOLIDAY})
    # Roles: an AP clerk may neither book nor promise.
    assert cl.post(path, json={"step": 1, "day": FRI, "hours": 2}, headers=c.headers("ap_clerk")).status_code == 403
    assert cl.post("/sales-orders/SO-1/promise", json={"promise_date": TUE},
                   headers=c.headers("ap_clerk")).status_code == 403


def test_promise_replaces_and_a_retry_with_its_key_books_once(company):
    c, cl = company, client(company)
    h = c.headers("planner")
    assert ok(cl.get("/sales-orders/SO-1/promise", headers=h), 200)["promise_date"] is None
    ok(cl.post("/sales-orders/SO-1/promise", json={"promise_date": FRI}, headers=h))
    again = ok(cl.post("/sales-orders/SO-1/promise", json={"promise_date": TUE, "note": "test slot"}, headers=h))
    assert again["promise_date"] == TUE and again["promised_by"] == "planner"
    wo = _wo(cl, c)
    keyed = c.headers("planner", key="book-1")
    first = cl.post(f"/work-orders/{wo['id']}/operations", json={"step": 1, "day": FRI, "hours": 2}, headers=keyed)
    second = cl.post(f"/work-orders/{wo['id']}/operations", json={"step": 1, "day": FRI, "hours": 2}, headers=keyed)
    assert first.json()["data"]["id"] == second.json()["data"]["id"]
    assert len(ok(cl.get("/wo-operations", params={"wo_id": wo["id"]}, headers=h), 200)["items"]) == 1


def test_a_company_without_the_feature_reads_nothing_and_refuses_writes(tmp_path):
    c = supply_company(tmp_path)
    _plant(c, enable=False)
    cl = client(c)
    wo = _wo(cl, c)
    admin = c.headers("admin")
    assert ok(cl.get("/wo-operations", headers=admin), 200)["items"] == []
    assert ok(cl.get("/sales-orders/SO-1/promise", headers=admin), 200)["promise_date"] is None
    refused(cl.post(f"/work-orders/{wo['id']}/operations", json={"step": 1, "day": FRI, "hours": 2},
                    headers=admin), "not_enabled")
    # Without the scenario's grant the planner holds no scheduling action.
    assert cl.post("/sales-orders/SO-1/promise", json={"promise_date": TUE},
                   headers=c.headers("planner")).status_code == 403
