"""Manufacturing and planning: the work-order lifecycle with its hard controls and WIP postings
that tie, issue reversal, and MRP runs with suggestion release."""
from __future__ import annotations

import pytest
from erp_finance_support import assert_refused_and_unchanged, client, ok, refused, ties
from erp_supply_support import sent_po, supply_company

from erp_service.domains.planning import forecasts


@pytest.fixture()
def company(tmp_path):
    c = supply_company(tmp_path)
    cl = client(c)
    h = c.headers("inventory_controller")
    ok(cl.post("/inventory/adjustments", json={"item_id": "BR-0750", "warehouse_id": "WH-MAIN",
                                               "location_id": "WH-MAIN-A01", "qty": 100, "reason": "count"}, headers=h))
    for lot, exp, qty in (("L-LATE", "2027-06-30", 30), ("L-SOON", "2026-12-31", 20)):
        ok(cl.post("/inventory/adjustments", json={"item_id": "SL-0101", "warehouse_id": "WH-MAIN", "lot_no": lot,
                                                   "expiry": exp, "qty": qty, "reason": "count"}, headers=h))
    return c


def _wo(cl, c, item="SA-0200", qty=10):
    return ok(cl.post("/work-orders", json={"item_id": item, "qty": qty, "due_date": "2026-10-20"},
                      headers=c.headers("production_supervisor")))


def test_work_order_lifecycle_wip_and_variance(company):
    c = company
    cl = client(c)
    h = c.headers("production_supervisor")
    wo = _wo(cl, c)
    assert wo["status"] == "planned"
    assert {r["item_id"]: r["required"] for r in wo["requirements"]} == {"BR-0750": 10, "SL-0101": 10}
    assert_refused_and_unchanged(c, cl, "POST", f"/work-orders/{wo['id']}/issue", "production_supervisor",
                                 "not_released", [("work_order", wo["id"])], body={"backflush_units": 1})
    ok(cl.post(f"/work-orders/{wo['id']}/release", headers=h))
    issued = ok(cl.post(f"/work-orders/{wo['id']}/issue", json={"backflush_units": 10}, headers=h))
    assert issued["status"] == "in_progress" and issued["wip"] == 55.0
    seal = next(i for i in issued["issues"] if i["item_id"] == "SL-0101")
    assert seal["picks"][0]["lot_no"] == "L-SOON"                 # first expiry first
    assert ties(c)["wip"]["gl"] == 55.0
    ok(cl.post(f"/work-orders/{wo['id']}/complete", json={"qty": 6, "location_id": "WH-MAIN-A02"}, headers=h))
    assert_refused_and_unchanged(c, cl, "POST", f"/work-orders/{wo['id']}/complete", "production_supervisor",
                                 "over_completion", [("work_order", wo["id"])], body={"qty": 5})
    done = ok(cl.post(f"/work-orders/{wo['id']}/complete", json={"qty": 4}, headers=h))
    assert done["status"] == "completed" and done["wip"] == -35.0       # 10 x 9.00 standard out, 55 in
    closed = ok(cl.post(f"/work-orders/{wo['id']}/close", headers=h))
    assert closed["status"] == "closed" and closed["variance"] == -35.0 and closed["wip"] == 0
    t = ties(c)
    assert t["wip"]["gl"] == 0 and t["inventory"]["tied"]
    assert_refused_and_unchanged(c, cl, "POST", f"/work-orders/{wo['id']}/cancel", "production_supervisor",
                                 "has_issues", [("work_order", wo["id"])])
    assert [h_["to_status"] for h_ in closed["history"]] == ["planned", "released", "in_progress", "completed", "closed"]
    usage = ok(cl.get("/reports/item-usage", params={"months": 2}, headers=c.headers("analyst")), 200)
    rows = {r["item_id"]: r for r in usage["rows"]}
    assert rows["BR-0750"]["used"] == 10 and rows["BR-0750"]["avg_monthly_usage"] == 5
    assert rows["BR-0750"]["on_hand"] == 90 and rows["BR-0750"]["months_of_cover"] == 18
    assert cl.get("/reports/item-usage", params={"months": 0}, headers=c.headers("analyst")).status_code == 422


def test_release_needs_components_and_issue_reversal(company):
    c = company
    cl = client(c)
    h = c.headers("production_supervisor")
    big = _wo(cl, c, qty=60)                                   # 60 seals needed, 50 on hand
    assert_refused_and_unchanged(c, cl, "POST", f"/work-orders/{big['id']}/release", "production_supervisor",
                                 "components_short", [("work_order", big["id"])])
    assert ok(cl.post(f"/work-orders/{big['id']}/cancel", headers=h))["status"] == "cancelled"
    wo = _wo(cl, c, qty=5)
    ok(cl.post(f"/work-orders/{wo['id']}/release", headers=h))
    issued = ok(cl.post(f"/work-orders/{wo['id']}/issue", json={"lines": [
        {"item_id": "BR-0750", "qty": 5, "location_id": "WH-MAIN-A01"},
        {"item_id": "SL-0101", "qty": 25}]}, headers=h))                 # spans both lots
    seal = next(i for i in issued["issues"] if i["item_id"] == "SL-0101")
    assert [p["lot_no"] for p in seal["picks"]] == ["L-SOON", "L-LATE"]
    refused(cl.post(f"/work-orders/{wo['id']}/issue", json={"lines": [{"item_id": "SL-0101", "qty": 26}]},
                    headers=h), "insufficient_stock")
    back = ok(cl.post(f"/wo-issues/{seal['id']}/reverse", headers=h))
    assert back["wip"] == 20.0
    oh = ok(cl.get("/inventory/on-hand", params={"item_id": "SL-0101"}, headers=h), 200)
    assert sorted((r["lot_no"], r["qty"]) for r in oh["items"]) == [("L-LATE", 30), ("L-SOON", 20)]
    refused(cl.post(f"/wo-issues/{seal['id']}/reverse", headers=h), "bad_status")
    assert cl.post(f"/work-orders/{wo['id']}/release", headers=c.headers("buyer")).status_code == 403
    ties(c)


def test_mrp_run_and_release(company):
    c = company
    c.builder.insert(forecasts, item_id="VB-1000", week_start="2026-10-19", qty=20)
    cl = client(c)
    h = c.headers("planner")
    run = ok(cl.post("/mrp/runs", json={"horizon_weeks": 4, "firm_days": 5}, headers=h))
    assert run["status"] == "done" and run["horizon_end"] == "2026-11-05"
    sugs = ok(cl.get("/mrp/suggestions", headers=h), 200)["items"]
    by_item = {(s["kind"], s["item_id"]): s for s in sugs}
    assert by_item[("planned_wo", "VB-1000")]["qty"] == 20
    assert by_item[("planned_wo", "SA-0200")]["qty"] == 20
    # BR-0750: 42 + 20 needed, 100 on hand: nothing to buy; seals: 40 + 20 needed, 50 on hand
    assert ("planned_po", "BR-0750") not in by_item
    seal = by_item[("planned_po", "SL-0101")]
    assert seal["qty"] == 10 and seal["vendor_id"] == "V-0104"
    wo_sug = by_item[("planned_wo", "VB-1000")]
    assert wo_sug["due_date"] == "2026-10-19" and wo_sug["release_date"] == "2026-10-16" and not wo_sug["firm"]
    released = ok(cl.post(f"/mrp/suggestions/{seal['id']}/release", headers=h))
    po = ok(cl.get(f"/purchase-orders/{released['released_doc']}", headers=h), 200)
    assert po["status"] == "sent" and po["source"] == "mrp" and po["lines"][0]["qty"] == 10
    refused(cl.post(f"/mrp/suggestions/{seal['id']}/release", headers=h), "bad_status")
    wo = ok(cl.post(f"/mrp/suggestions/{wo_sug['id']}/release", headers=h))
    assert ok(cl.get(f"/work-orders/{wo['released_doc']}", headers=h), 200)["status"] == "planned"
    # a second run supersedes the first run's open suggestions and sees the new supply
    run2 = ok(cl.post("/mrp/runs", headers=h))
    assert run2["horizon_weeks"] == 8
    latest = ok(cl.get("/mrp/suggestions", headers=h), 200)["items"]
    assert all(s["run_id"] == run2["id"] for s in latest)
    assert not [s for s in latest if s["kind"] == "planned_po" and s["item_id"] == "SL-0101"]
    assert not [s for s in latest if s["item_id"] == "VB-1000"]
    assert cl.post("/mrp/runs", json={"horizon_weeks": 0}, headers=h).status_code == 422
    assert cl.post("/mrp/runs", headers=c.headers("buyer")).status_code == 403
    assert len(ok(cl.get("/mrp/runs", headers=h), 200)["items"]) == 2


def test_mrp_expedites_late_supply(company):
    c = company
    c.builder.insert(forecasts, item_id="BR-0750", week_start="2026-10-19", qty=150)
    cl = client(c)
    po = sent_po(cl, c, qty=100, need_by="2026-11-30")
    h = c.headers("planner")
    ok(cl.post("/mrp/runs", json={"horizon_weeks": 10}, headers=h))
    sugs = ok(cl.get("/mrp/suggestions", params={"item_id": "BR-0750"}, headers=h), 200)["items"]
    exp = [s for s in sugs if s["kind"] == "expedite"]
    assert exp and exp[0]["po_id"] == po["id"] and exp[0]["due_date"] == "2026-10-19"
    vr = ok(cl.post(f"/mrp/suggestions/{exp[0]['id']}/release", headers=h))
    req = ok(cl.get(f"/vendor-requests/{vr['released_doc']}", headers=h), 200)
    assert req["kind"] == "expedite" and req["requested_date"] == "2026-10-19"


def test_mrp_keeps_safety_stock_with_moq_and_multiple(company):
    c = company
    cl = client(c)
    h = c.headers("planner")
    ok(cl.patch("/items/BR-0750", json={"safety_stock": 160}, headers=h), 200)     # 100 on hand
    ok(cl.post("/mrp/runs", headers=h))
    sugs = ok(cl.get("/mrp/suggestions", params={"item_id": "BR-0750"}, headers=h), 200)["items"]
    assert [(s["kind"], s["qty"], s["due_date"], s["firm"]) for s in sugs] == [("planned_po", 100.0, "2026-10-08", True)]
    ok(cl.patch("/items/BR-0750", json={"moq": 0, "order_multiple": 25}, headers=h), 200)
    ok(cl.post("/mrp/runs", headers=h))
    sugs = ok(cl.get("/mrp/suggestions", params={"item_id": "BR-0750"}, headers=h), 200)["items"]
    assert [s["qty"] for s in sugs] == [75.0]
