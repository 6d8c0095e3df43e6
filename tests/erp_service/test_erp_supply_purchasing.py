"""Purchasing: requisition routing and approval controls, purchase-order pricing, approval and
sending controls, frozen sent orders, vendor requests, and master-data reads."""
from __future__ import annotations

import pytest
from erp_finance_support import assert_refused_and_unchanged, client, ok, refused
from erp_supply_support import add_leave, audit_rows, sent_po, supply_company


@pytest.fixture()
def company(tmp_path):
    return supply_company(tmp_path)


def _req(cl, c, user="staff", amount_qty=100, price=10.0):
    return ok(cl.post("/requisitions", json={"need_by": "2026-10-30", "note": "shop stock",
                                             "lines": [{"item_id": "BR-0750", "qty": amount_qty, "unit_price": price,
                                                        "vendor_id": "V-0101"}]}, headers=c.headers(user)))


def test_requisition_lifecycle_and_controls(company):
    c = company
    cl = client(c)
    req = _req(cl, c)                     # 1,000.00
    assert req["status"] == "draft" and req["total"] == 1000.0
    # only the requester submits
    r = cl.post(f"/requisitions/{req['id']}/submit", headers=c.headers("dept_head"))
    assert r.status_code == 403
    sub = ok(cl.post(f"/requisitions/{req['id']}/submit", headers=c.headers("staff")))
    assert sub["status"] == "submitted" and sub["assigned_to"] == "dept_head"
    approvals = ok(cl.get("/approvals", headers=c.headers("dept_head")), 200)
    assert [a["doc_id"] for a in approvals["items"]] == [req["id"]]
    # someone else with approval rights, not assigned
    assert_refused_and_unchanged(c, cl, "POST", f"/requisitions/{req['id']}/approve", "purchasing_manager",
                                 "not_assigned", [("requisition", req["id"])])
    # a role without the permission
    r = cl.post(f"/requisitions/{req['id']}/approve", headers=c.headers("receiver"))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    ok(cl.post(f"/requisitions/{req['id']}/approve", json={"note": "fine"}, headers=c.headers("dept_head")))
    ev = audit_rows(c, action="req.approve", outcome="ok")[-1]
    assert (ev["object_type"], ev["object_id"]) == ("requisition", req["id"])
    done = ok(cl.get(f"/requisitions/{req['id']}", headers=c.headers("staff")), 200)
    assert done["status"] == "approved" and done["approved_by"] == "dept_head"
    assert [h["to_status"] for h in done["history"]] == ["draft", "submitted", "approved"]
    # approving again is beyond the lifecycle
    assert_refused_and_unchanged(c, cl, "POST", f"/requisitions/{req['id']}/approve", "dept_head", "bad_status",
                                 [("requisition", req["id"])])


def test_requester_cannot_approve_and_over_limit_forward(company):
    c = company
    cl = client(c)
    # the department head's own requisition goes to their manager
    own = _req(cl, c, user="dept_head")
    sub = ok(cl.post(f"/requisitions/{own['id']}/submit", headers=c.headers("dept_head")))
    assert sub["assigned_to"] == "purchasing_manager"
    assert_refused_and_unchanged(c, cl, "POST", f"/requisitions/{own['id']}/approve", "dept_head",
                                 "requester_cannot_approve", [("requisition", own["id"])])
    # forwarding to the requester is refused too
    assert_refused_and_unchanged(c, cl, "POST", f"/requisitions/{own['id']}/forward", "purchasing_manager",
                                 "requester_cannot_approve", [("requisition", own["id"])], body={"to": "dept_head"})
    big = _req(cl, c, amount_qty=1000, price=8.0)          # 8,000.00 > 5,000 limit
    ok(cl.post(f"/requisitions/{big['id']}/submit", headers=c.headers("staff")))
    assert_refused_and_unchanged(c, cl, "POST", f"/requisitions/{big['id']}/approve", "dept_head", "over_limit",
                                 [("requisition", big["id"])])
    # forward to someone who cannot approve
    assert_refused_and_unchanged(c, cl, "POST", f"/requisitions/{big['id']}/forward", "dept_head",
                                 "not_an_approver", [("requisition", big["id"])], body={"to": "receiver"})
    fwd = ok(cl.post(f"/requisitions/{big['id']}/forward", json={"to": "purchasing_manager", "note": "over my limit"},
                     headers=c.headers("dept_head")))
    assert fwd["assigned_to"] == "purchasing_manager"
    assert [a["status"] for a in fwd["approvals"]] == ["forwarded", "pending"]
    ok(cl.post(f"/requisitions/{big['id']}/approve", headers=c.headers("purchasing_manager")))
    refusals = [a for a in audit_rows(c, outcome="refused") if a["path"].startswith("/requisitions/")]
    assert {a["error_code"] for a in refusals} >= {"over_limit", "requester_cannot_approve", "not_an_approver"}


def test_return_reject_cancel(company):
    c = company
    cl = client(c)
    a = _req(cl, c)
    ok(cl.post(f"/requisitions/{a['id']}/submit", headers=c.headers("staff")))
    back = ok(cl.post(f"/requisitions/{a['id']}/return", json={"note": "add a vendor quote"},
                      headers=c.headers("dept_head")))
    assert back["status"] == "returned" and back["assigned_to"] is None
    ok(cl.post(f"/requisitions/{a['id']}/submit", headers=c.headers("staff")))
    rej = ok(cl.post(f"/requisitions/{a['id']}/reject", headers=c.headers("dept_head")))
    assert rej["status"] == "rejected"
    b = _req(cl, c)
    assert ok(cl.post(f"/requisitions/{b['id']}/cancel", headers=c.headers("staff")))["status"] == "cancelled"
    # a rejected requisition cannot be ordered
    refused(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "requisition_id": a["id"]},
                    headers=c.headers("buyer")), "req_not_approved")


def test_leave_waits_unless_routed_to_delegate(company):
    c = company
    add_leave(c, "dept_head", "2026-10-01", "2026-10-31", delegate="dept_head2")
    cl = client(c)
    req = _req(cl, c)
    sub = ok(cl.post(f"/requisitions/{req['id']}/submit", headers=c.headers("staff")))
    assert sub["assigned_to"] == "dept_head"          # waits on the head ...
    refused(cl.post(f"/requisitions/{req['id']}/approve", headers=c.headers("dept_head2")), "not_assigned")
    # ... until the requester routes it to the delegate
    ok(cl.post(f"/requisitions/{req['id']}/forward", json={"to": "dept_head2"}, headers=c.headers("staff")))
    assert ok(cl.post(f"/requisitions/{req['id']}/approve", headers=c.headers("dept_head2")))["status"] == "approved"


def test_po_from_requisition_pricing_and_send_controls(company):
    c = company
    cl = client(c)
    req = _req(cl, c, amount_qty=500, price=4.0)          # 2,000.00
    ok(cl.post(f"/requisitions/{req['id']}/submit", headers=c.headers("staff")))
    ok(cl.post(f"/requisitions/{req['id']}/approve", headers=c.headers("dept_head")))
    po = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "requisition_id": req["id"],
                                              "warehouse_id": "WH-MAIN"}, headers=c.headers("buyer")))
    line = po["lines"][0]
    assert po["status"] == "draft" and line["requisition_id"] == req["id"]
    assert line["unit_price"] == 3.90 and line["price_source"] == "agreement:PA-1001"   # break at 500
    assert ok(cl.get(f"/requisitions/{req['id']}", headers=c.headers("staff")), 200)["status"] == "converted"
    # a converted requisition line cannot be ordered twice
    refused(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"requisition_id": req["id"], "requisition_line": 1}]}, headers=c.headers("buyer")), "req_line_converted")
    # quantity change re-prices at the break reached
    po = ok(cl.patch(f"/purchase-orders/{po['id']}/lines/1", json={"qty": 150}, headers=c.headers("buyer")), 200)
    assert po["lines"][0]["unit_price"] == 4.20 and po["total"] == 630.0
    # requisition-backed value does not count against the buyer's limit
    sent = ok(cl.post(f"/purchase-orders/{po['id']}/send", headers=c.headers("buyer")))
    assert sent["status"] == "sent" and sent["sent_on"] == "2026-10-08"
    # sent orders are frozen
    assert_refused_and_unchanged(c, cl, "PATCH", f"/purchase-orders/{po['id']}/lines/1", "buyer", "po_sent",
                                 [("purchase_order", po["id"])], body={"qty": 10})
    assert_refused_and_unchanged(c, cl, "POST", f"/purchase-orders/{po['id']}/lines", "buyer", "po_sent",
                                 [("purchase_order", po["id"])], body={"item_id": "BR-0750", "qty": 5})
    assert_refused_and_unchanged(c, cl, "POST", f"/purchase-orders/{po['id']}/send", "buyer", "bad_status",
                                 [("purchase_order", po["id"])])


def test_po_limits_approval_and_inactive_vendor(company):
    c = company
    cl = client(c)
    # vendor inactive: no new PO
    refused(cl.post("/purchase-orders", json={"vendor_id": "V-0103", "lines": [{"item_id": "BR-0750", "qty": 5}]},
                    headers=c.headers("buyer")), "vendor_inactive")
    assert not [a for a in audit_rows(c, path="/purchase-orders") if a["outcome"] == "ok"]
    po = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"item_id": "BR-0750", "qty": 1000}]}, headers=c.headers("buyer")))        # 3,900.00 > buyer's 2,000
    assert_refused_and_unchanged(c, cl, "POST", f"/purchase-orders/{po['id']}/send", "buyer", "over_limit",
                                 [("purchase_order", po["id"])])
    assert cl.post(f"/purchase-orders/{po['id']}/approve", headers=c.headers("buyer")).status_code == 403
    own = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"item_id": "BR-0750", "qty": 10}]}, headers=c.headers("purchasing_manager")))
    assert_refused_and_unchanged(c, cl, "POST", f"/purchase-orders/{own['id']}/approve", "purchasing_manager",
                                 "preparer_cannot_approve", [("purchase_order", own["id"])])
    appr = ok(cl.post(f"/purchase-orders/{po['id']}/approve", headers=c.headers("purchasing_manager")))
    assert appr["status"] == "approved" and appr["approved_by"] == "purchasing_manager"
    assert ok(cl.post(f"/purchase-orders/{po['id']}/send", headers=c.headers("buyer")))["status"] == "sent"
    # editing a draft after approval sends it back to draft
    po2 = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [
        {"item_id": "BR-0750", "qty": 10, "unit_price": 5}]}, headers=c.headers("buyer")))
    ok(cl.post(f"/purchase-orders/{po2['id']}/approve", headers=c.headers("purchasing_manager")))
    back = ok(cl.post(f"/purchase-orders/{po2['id']}/lines", json={"item_id": "SL-0101", "qty": 10},
                      headers=c.headers("buyer")))
    assert back["status"] == "draft" and len(back["lines"]) == 2
    empty = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101"}, headers=c.headers("buyer")))
    refused(cl.post(f"/purchase-orders/{empty['id']}/send", headers=c.headers("buyer")), "empty_po")
    # a receiver cannot create purchase orders
    r = cl.post("/purchase-orders", json={"vendor_id": "V-0101"}, headers=c.headers("receiver"))
    assert r.status_code == 403
    cancelled = ok(cl.post(f"/purchase-orders/{po2['id']}/cancel", headers=c.headers("buyer")))
    assert cancelled["status"] == "cancelled"
    # a vendor made inactive after the draft was written: the PO cannot be sent
    po3 = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0102", "lines": [
        {"item_id": "BR-0750", "qty": 10, "unit_price": 5}]}, headers=c.headers("buyer")))
    ok(cl.patch("/vendors/V-0102", json={"status": "inactive"}, headers=c.headers("purchasing_manager")), 200)
    assert_refused_and_unchanged(c, cl, "POST", f"/purchase-orders/{po3['id']}/send", "buyer", "vendor_inactive",
                                 [("purchase_order", po3["id"])])


def test_vendor_requests_and_dispute_link(company):
    c = company
    cl = client(c)
    po = sent_po(cl, c)
    r = ok(cl.post("/vendor-requests", json={"kind": "expedite", "po_id": po["id"], "po_line": 1,
                                             "requested_date": "2026-10-12", "reason": "line down"},
                   headers=c.headers("buyer")))
    assert r["vendor_id"] == "V-0101" and r["status"] == "open"
    refused(cl.post("/vendor-requests", json={"kind": "expedite", "po_id": "PO-NOPE"}, headers=c.headers("buyer")),
            "not_found", 404)
    bad = cl.post("/vendor-requests", json={"kind": "bribe", "po_id": po["id"]}, headers=c.headers("buyer"))
    assert bad.status_code == 422
    inv = ok(cl.post("/ap-invoices", json={"vendor": "V-0101", "invoice_no": "BW-9", "invoice_date": "2026-10-08",
                                           "lines": [{"kind": "other", "description": "x", "amount": 10,
                                                      "account": "6200"}]}, headers=c.headers("ap_clerk")))
    d = ok(cl.post("/vendor-requests", json={"kind": "dispute", "ap_invoice_id": inv["id"], "reason": "price"},
                   headers=c.headers("ap_clerk")))
    assert d["vendor_id"] == "V-0101" and d["invoice_no"] == "BW-9"
    listed = ok(cl.get("/vendor-requests", params={"ap_invoice_id": inv["id"]}, headers=c.headers("ap_clerk")), 200)
    assert [x["id"] for x in listed["items"]] == [d["id"]]
    # only vendors answer
    r2 = cl.post(f"/vendor-requests/{d['id']}/answer", json={"decision": "accepted"}, headers=c.headers("buyer"))
    assert r2.status_code == 403


def test_master_data_reads_and_planning_patch(company):
    c = company
    cl = client(c)
    h = c.headers("analyst")
    items = ok(cl.get("/items", params={"type": "seal"}, headers=h), 200)
    assert [i["id"] for i in items["items"]] == ["SL-0101", "SL-0102"]
    assert ok(cl.get("/items", params={"q": "valve"}, headers=h), 200)["total"] == 1
    item = ok(cl.get("/items/SL-0101", headers=h), 200)
    assert item["lot_controlled"] and item["substitutes"][0]["substitute_id"] == "SL-0102"
    br = ok(cl.get("/items/BR-0750", headers=h), 200)
    assert [b["unit_price"] for b in br["agreements"][0]["breaks"]] == [4.5, 4.2, 3.9]
    bom = ok(cl.get("/boms/VB-1000", headers=h), 200)
    per_unit = {x["item_id"]: x["qty"] for x in bom["exploded_per_unit"]}
    assert per_unit == {"BR-0750": 2.1, "SA-0200": 1.0, "SL-0101": 2.0}    # phantom passed through, scrap 5%
    old = ok(cl.get("/boms/SA-0200", params={"date": "2026-09-15"}, headers=h), 200)
    assert {l["component_item"] for l in old["lines"]} == {"BR-0750", "SL-0102"}
    assert ok(cl.get("/boms/SA-0200", headers=h), 200)["pending_change"] is True
    assert cl.get("/boms/SA-0200", params={"date": "2026-10-99"}, headers=h).status_code == 422
    whs = ok(cl.get("/warehouses", headers=h), 200)
    assert [len(w["locations"]) for w in whs["items"]] == [1, 2]
    assert ok(cl.get("/work-centers", headers=h), 200)["total"] == 1
    assert ok(cl.get("/price-agreements", params={"vendor_id": "V-0101", "active": True}, headers=h), 200)["total"] == 1
    patched = ok(cl.patch("/items/BR-0750", json={"safety_stock": 50, "lead_time_days": 7}, headers=c.headers("planner")),
                 200)
    assert patched["safety_stock"] == 50 and patched["lead_time_days"] == 7
    assert cl.patch("/items/BR-0750", json={"standard_cost": 1}, headers=c.headers("planner")).status_code == 422
    assert cl.patch("/items/BR-0750", json={"moq": 5}, headers=c.headers("buyer")).status_code == 403
