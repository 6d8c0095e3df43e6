"""MRP's action messages and late planned orders (erp_service/domains/planning/): a receipt
due two weeks or more before it is needed is a defer message, released as a defer request at
the need date; a planned order whose lead time is already past is firm and marked late; a
receipt due after the shortage is still an expedite."""
from __future__ import annotations

import pytest
from erp_finance_support import client, ok
from erp_supply_support import sent_po, supply_company

from erp_service.domains.planning import forecasts


@pytest.fixture()
def company(tmp_path):
    c = supply_company(tmp_path)      # business date 2026-10-08, no BR-0750 on hand
    c.builder.insert(forecasts, item_id="BR-0750", week_start="2026-11-16", qty=150)
    return c


def _sugs(cl, h, item="BR-0750"):
    return ok(cl.get("/mrp/suggestions", params={"item_id": item}, headers=h), 200)["items"]


def test_an_early_receipt_is_a_defer_released_as_a_defer_request(company):
    c = company
    cl = client(c)
    po = sent_po(cl, c, qty=150, need_by="2026-10-12")
    h = c.headers("planner")
    ok(cl.post("/mrp/runs", headers=h))
    sugs = _sugs(cl, h)
    assert [(s["kind"], s["po_id"], s["due_date"], s["current_date"]) for s in sugs] == \
        [("defer", po["id"], "2026-11-16", "2026-10-12")]
    vr = ok(cl.post(f"/mrp/suggestions/{sugs[0]['id']}/release", headers=h))
    req = ok(cl.get(f"/vendor-requests/{vr['released_doc']}", headers=h), 200)
    assert (req["kind"], req["po_id"], req["requested_date"], req["status"]) == \
        ("defer", po["id"], "2026-11-16", "open")


def test_a_receipt_a_little_early_is_left_alone_and_a_late_one_expedited(company):
    c = company
    cl = client(c)
    sent_po(cl, c, qty=150, need_by="2026-11-09")           # a week early: not worth moving
    h = c.headers("planner")
    ok(cl.post("/mrp/runs", headers=h))
    assert _sugs(cl, h) == []
    late = sent_po(cl, c, qty=150, need_by="2026-12-01")
    ok(cl.post("/mrp/runs", headers=h))
    kinds = sorted((s["kind"], s["po_id"]) for s in _sugs(cl, h))
    assert kinds == [("cancel", late["id"])]                  # the early one covers the need now


def test_a_planned_order_past_its_lead_time_is_firm_and_late(company):
    c = company
    cl = client(c)
    h = c.headers("planner")
    ok(cl.post("/mrp/runs", headers=h))
    (normal,) = _sugs(cl, h)
    assert normal["kind"] == "planned_po" and not normal["late"] and not normal["firm"]
    ok(cl.patch("/items/BR-0750", json={"lead_time_days": 60}, headers=h), 200)
    ok(cl.post("/mrp/runs", headers=h))
    (late,) = _sugs(cl, h)
    assert (late["late"], late["firm"], late["release_date"], late["due_date"]) == \
        (True, True, "2026-10-08", "2026-11-16")
    assert "2026-09-17" in late["note"]
