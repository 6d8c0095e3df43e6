"""The purchasing extensions the A1/B1 packs rely on, through the real HTTP app: reason codes on
routing decisions, one PO line consolidating several requisition lines (and its cancellation),
and budget availability with open commitments."""
from __future__ import annotations

import pytest
from erp_finance_support import client, ok, refused
from erp_supply_support import supply_company

from erp_service.domains import ledger


@pytest.fixture()
def company(tmp_path):
    return supply_company(tmp_path)


def _approved_req(cl, c, line: dict, *, approve: bool = True) -> str:
    req = ok(cl.post("/requisitions", json={"note": "needed", "lines": [line]}, headers=c.headers("staff")))
    ok(cl.post(f"/requisitions/{req['id']}/submit", headers=c.headers("staff")))
    if approve:
        ok(cl.post(f"/requisitions/{req['id']}/approve", json={}, headers=c.headers("dept_head")))
    return req["id"]


def test_reason_codes_travel_with_forward_and_return(company):
    c = company
    cl = client(c)
    rid = _approved_req(cl, c, {"item_id": "BR-0750", "qty": 100, "unit_price": 4.5}, approve=False)
    fwd = ok(cl.post(f"/requisitions/{rid}/forward", json={"to": "purchasing_manager", "reason": "budget",
                                                           "note": "October repairs budget is spent"},
                     headers=c.headers("dept_head")))
    assert fwd["assigned_to"] == "purchasing_manager"
    assert [a["note"] for a in fwd["approvals"]] == ["[budget] October repairs budget is spent"] * 2
    back = ok(cl.post(f"/requisitions/{rid}/return", json={"reason": "missing_justification"},
                      headers=c.headers("purchasing_manager")))
    assert back["status"] == "returned" and back["approvals"][-1]["note"] == "[missing_justification]"
    # An unknown code is malformed input, and changes nothing.
    rid2 = _approved_req(cl, c, {"item_id": "BR-0750", "qty": 10, "unit_price": 4.5}, approve=False)
    r = cl.post(f"/requisitions/{rid2}/return", json={"reason": "too_expensive"}, headers=c.headers("dept_head"))
    assert r.status_code == 422
    assert ok(cl.get(f"/requisitions/{rid2}", headers=c.headers("staff")), 200)["status"] == "submitted"


def test_one_po_line_consolidates_requisition_lines(company):
    c = company
    cl = client(c)
    h = c.headers("purchasing_manager")
    r1 = _approved_req(cl, c, {"item_id": "BR-0750", "qty": 300, "vendor_id": "V-0101"})
    r2 = _approved_req(cl, c, {"item_id": "BR-0750", "qty": 250, "vendor_id": "V-0101"})
    r3 = _approved_req(cl, c, {"item_id": "SL-0101", "qty": 20, "vendor_id": "V-0104"})
    # Another item cannot share the line; naming a line twice is malformed.
    bad = cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"requisition_id": r1, "requisition_line": 1, "consolidates": [{"requisition_id": r3, "requisition_line": 1}]}]},
        headers=h)
    assert bad.status_code == 422 and "only one item" in bad.json()["detail"]
    twice = cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"requisition_id": r1, "requisition_line": 1, "consolidates": [{"requisition_id": r1, "requisition_line": 1}]}]},
        headers=h)
    assert twice.status_code == 422
    po = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"requisition_id": r1, "requisition_line": 1, "consolidates": [{"requisition_id": r2, "requisition_line": 1}]}]},
        headers=h))
    (line,) = po["lines"]
    # 550 ft reaches the 500-ft break of the agreement: one line at the break price.
    assert line["qty"] == 550 and line["unit_price"] == 3.90 and line["price_source"] == "agreement:PA-1001"
    assert sorted(po["links"]["requisition"]) == [r1]
    for rid in (r1, r2):
        req = ok(cl.get(f"/requisitions/{rid}", headers=h), 200)
        assert req["status"] == "converted" and req["lines"][0]["po_id"] == po["id"]
    # The second requisition line cannot be ordered again.
    again = cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"requisition_id": r2, "requisition_line": 1}]}, headers=h)
    refused(again, "req_line_converted")
    # Cancelling the PO makes both requisition lines orderable again.
    ok(cl.post(f"/purchase-orders/{po['id']}/cancel", json={"note": "wrong warehouse"}, headers=h))
    for rid in (r1, r2):
        req = ok(cl.get(f"/requisitions/{rid}", headers=h), 200)
        assert req["status"] == "approved" and req["lines"][0]["po_id"] is None


def test_budget_availability_counts_open_commitments(company):
    c = company
    cl = client(c)
    h = c.headers("purchasing_manager")
    c.builder.insert(ledger.budgets, department_id="OPS", account_id="6200", period_id="2026-10",
                     amount_cents=1_000_000)
    repair = {"description": "Dock door repair", "qty": 1, "unit_price": 1500, "account_id": "6200",
              "vendor_id": "V-0101"}
    # Approved, not ordered: 1,500 committed.
    _approved_req(cl, c, repair)
    # Ordered and sent, 40 of 100 received: 60 x 25 = 1,500 still committed, 1,000 posted as actual.
    ordered = _approved_req(cl, c, {"description": "Filters", "qty": 100, "unit_price": 25, "account_id": "6200",
                                    "vendor_id": "V-0101"})
    po = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "warehouse_id": "WH-MAIN", "lines": [
        {"requisition_id": ordered, "requisition_line": 1}]}, headers=h))
    ok(cl.post(f"/purchase-orders/{po['id']}/send", headers=h))
    ok(cl.post("/receipts", json={"po_id": po["id"], "lines": [{"po_line": 1, "qty_received": 40}]},
               headers=c.headers("receiver")))
    # Submitted but not approved: not a commitment.
    _approved_req(cl, c, {**repair, "unit_price": 900}, approve=False)
    rep = ok(cl.get("/reports/budget-availability", params={"department": "OPS"}, headers=h), 200)
    assert rep["period"] == "2026-10"
    (row,) = rep["rows"]
    assert row == {"department": "OPS", "account": "6200", "budget": 10_000.0, "actual": 1_000.0,
                   "committed_requisitions": 1_500.0, "committed_purchase_orders": 1_500.0, "committed": 3_000.0,
                   "available": 6_000.0}
    # Another month has no budget row; a period that does not exist is malformed.
    assert ok(cl.get("/reports/budget-availability", params={"period": "2026-11"}, headers=h), 200)["rows"] == []
    assert cl.get("/reports/budget-availability", params={"period": "1999-01"}, headers=h).status_code == 422
    assert cl.get("/reports/budget-availability", params={"dept": "OPS"}, headers=h).status_code == 422
