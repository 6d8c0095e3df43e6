"""Payables: entry as billed, duplicates, line edits only while entered, holds and release,
validation postings, approval controls, reject/void, disputes visible on the invoice, aging."""
from __future__ import annotations

import pytest
from erp_finance_support import assert_refused_and_unchanged, client, finance_company, invoice, ok, refused, ties

from erp_service.kernel.schema import metadata


@pytest.fixture()
def company(tmp_path):
    return finance_company(tmp_path)


LINES = [{"kind": "other", "description": "valve repair", "qty": 3, "unit_price": 250.00, "account": "6200"},
         {"kind": "freight", "amount": 45.50},
         {"kind": "tax", "amount": 60.00}]


def test_entry_terms_duplicates_and_line_edits(company):
    c = company
    cl = client(c)
    clerk = c.headers("ap_clerk")
    inv = ok(cl.post("/ap-invoices", json={"vendor": "V-0102", "invoice_no": "OP-1", "invoice_date": "2026-10-01",
                                           "lines": LINES, "source_ref": "MSG-9"}, headers=clerk))
    assert inv["status"] == "entered" and inv["total"] == 855.50
    assert inv["due_date"] == "2026-10-31" and inv["discount_date"] == "2026-10-11" and inv["discount"] == 17.11
    assert [l["kind"] for l in inv["lines"]] == ["other", "freight", "tax"]
    assert_refused_and_unchanged(c, cl, "POST", "/ap-invoices", "ap_clerk", "duplicate_invoice",
                                 [("ap_invoice", inv["id"])],
                                 body={"vendor": "V-0102", "invoice_no": "OP-1", "invoice_date": "2026-10-02",
                                       "lines": [{"kind": "other", "amount": 1}]})
    # A normalised variant is not caught by the system (the clerk's job).
    ok(cl.post("/ap-invoices", json={"vendor": "V-0102", "invoice_no": "OP1", "invoice_date": "2026-10-02",
                                     "lines": [{"kind": "other", "amount": 1}]}, headers=clerk))
    edited = ok(cl.patch(f"/ap-invoices/{inv['id']}/lines/1", json={"qty": 2}, headers=clerk), 200)
    assert edited["total"] == 605.50 and edited["discount"] == 12.11
    ok(cl.post(f"/ap-invoices/{inv['id']}/validate", headers=clerk))
    assert_refused_and_unchanged(c, cl, "PATCH", f"/ap-invoices/{inv['id']}/lines/1", "ap_clerk", "not_editable",
                                 [("ap_invoice", inv["id"])], body={"qty": 1})
    for bad in ({"vendor": "V-0102", "invoice_no": "X", "invoice_date": "2026-02-30", "lines": [{"amount": 1}]},
                {"vendor": "V-0102", "invoice_no": "X", "invoice_date": "2026-10-01", "lines": []},
                {"vendor": "V-0102", "invoice_no": "X", "invoice_date": "2026-10-01", "lines": [{"kind": "gift", "amount": 1}]},
                {"vendor": "V-0102", "invoice_no": "X", "invoice_date": "2026-10-01", "lines": [{"amount": 1}], "extra": 1}):
        assert cl.post("/ap-invoices", json=bad, headers=clerk).status_code == 422
    assert cl.post("/ap-invoices", json={"vendor": "V-0999", "invoice_no": "X", "invoice_date": "2026-10-01",
                                         "lines": [{"amount": 1}]}, headers=clerk).status_code == 404


def test_validation_posts_and_ties(company):
    c = company
    cl = client(c)
    inv = ok(cl.post("/ap-invoices", json={"vendor": "V-0101", "invoice_no": "B-1", "invoice_date": "2026-10-01",
                                           "lines": LINES}, headers=c.headers("ap_clerk")))
    ok(cl.post(f"/ap-invoices/{inv['id']}/validate", headers=c.headers("ap_clerk")))
    got = ok(cl.get(f"/ap-invoices/{inv['id']}", headers=c.headers("ap_clerk")), 200)
    assert got["status"] == "matched" and got["match"]["result"] == "no_item_lines"
    je = got["links"]["journal_entry"][0]
    entry = ok(cl.get(f"/journal-entries/{je}", headers=c.headers("controller")), 200)
    amounts = {(l["account"], l["debit"], l["credit"]) for l in entry["lines"]}
    assert amounts == {("6200", 750.0, 0.0), ("5400", 45.5, 0.0), ("6750", 60.0, 0.0), ("2000", 0.0, 855.5)}
    t = ties(c)
    assert t["ap"]["gl"] == -855.5
    refused(cl.post(f"/ap-invoices/{inv['id']}/validate", headers=c.headers("ap_clerk")), "bad_status")


def test_holds_approval_and_self_approval(company):
    c = company
    cl = client(c)
    sup = c.headers("ap_supervisor")
    # The enterer cannot approve their own invoice above the self-approval limit (default 0).
    own = invoice(cl, c, "V-0101", "S-1", "2026-10-01", 100.0, user="ap_supervisor", approve=False)
    assert_refused_and_unchanged(c, cl, "POST", f"/ap-invoices/{own}/approve", "ap_supervisor",
                                 "preparer_cannot_approve", [("ap_invoice", own)])
    ok(cl.post(f"/ap-invoices/{own}/approve", headers=c.headers("ap_supervisor2")))
    # Entered invoices cannot be approved; held ones cannot be validated or approved.
    inv = invoice(cl, c, "V-0101", "H-1", "2026-10-01", 100.0, validate=False, approve=False)
    refused(cl.post(f"/ap-invoices/{inv}/approve", headers=sup), "bad_status")
    held = ok(cl.post(f"/ap-invoices/{inv}/holds", json={"reason": "quantity", "note": "short"}, headers=sup))
    assert held["status"] == "on_hold" and held["on_hold"] and held["holds"][0]["reason"] == "quantity"
    second = ok(cl.post(f"/ap-invoices/{inv}/holds", json={"reason": "price", "line_no": 1}, headers=sup))
    assert len([h for h in second["holds"] if h["status"] == "active"]) == 2
    assert_refused_and_unchanged(c, cl, "POST", f"/ap-invoices/{inv}/validate", "ap_clerk", "on_hold",
                                 [("ap_invoice", inv)])
    assert_refused_and_unchanged(c, cl, "POST", f"/ap-invoices/{inv}/approve", "ap_supervisor", "on_hold",
                                 [("ap_invoice", inv)])
    # The clerk places holds but cannot release them.
    refused(cl.post(f"/holds/{second['holds'][0]['id']}/release", headers=c.headers("ap_clerk")), "forbidden", 403)
    after1 = ok(cl.post(f"/holds/{second['holds'][0]['id']}/release", json={"note": "ok"}, headers=sup))
    assert after1["status"] == "on_hold"
    after2 = ok(cl.post(f"/holds/{second['holds'][1]['id']}/release", headers=sup))
    assert after2["status"] == "entered"
    refused(cl.post(f"/holds/{second['holds'][1]['id']}/release", headers=sup), "bad_status")
    ok(cl.post(f"/ap-invoices/{inv}/validate", headers=c.headers("ap_clerk")))
    assert ok(cl.post(f"/ap-invoices/{inv}/approve", headers=sup))["status"] == "approved"
    hist = ok(cl.get(f"/ap-invoices/{inv}", headers=sup), 200)["history"]
    assert [h["to_status"] for h in hist] == ["entered", "on_hold", "entered", "matched", "approved"]
    refused(cl.post("/ap-invoices/APINV-10001/holds", json={"reason": "nonsense"}, headers=sup), "invalid", 422)


def test_reject_void_and_reversal_of_validation(company):
    c = company
    cl = client(c)
    sup = c.headers("ap_supervisor")
    entered = invoice(cl, c, "V-0101", "RJ-1", "2026-10-01", 10.0, validate=False, approve=False)
    assert ok(cl.post(f"/ap-invoices/{entered}/reject", json={"note": "not ours"}, headers=sup))["status"] == "rejected"
    # A rejected invoice number can be entered again.
    invoice(cl, c, "V-0101", "RJ-1", "2026-10-01", 10.0, validate=False, approve=False)
    valid = invoice(cl, c, "V-0101", "VD-1", "2026-10-01", 321.0)
    assert_refused_and_unchanged(c, cl, "POST", f"/ap-invoices/{valid}/reject", "ap_supervisor", "bad_status",
                                 [("ap_invoice", valid)])
    assert ties(c)["ap"]["gl"] == -321.0
    voided = ok(cl.post(f"/ap-invoices/{valid}/void", json={"note": "billed twice"}, headers=sup))
    assert voided["status"] == "voided" and voided["open"] == 0
    assert ties(c)["ap"]["gl"] == 0
    refused(cl.post(f"/ap-invoices/{valid}/void", headers=sup), "bad_status")
    refused(cl.post(f"/ap-invoices/{valid}/void", headers=c.headers("ap_clerk")), "forbidden", 403)


def test_dispute_visible_through_vendor_request(company):
    c = company
    cl = client(c)
    inv = invoice(cl, c, "V-0101", "D-1", "2026-10-01", 90.0)
    assert ok(cl.get(f"/ap-invoices/{inv}", headers=c.headers("ap_supervisor")), 200)["disputed"] is False
    vr = metadata.tables.get("vendor_requests")
    if vr is None:
        pytest.skip("purchasing's vendor_requests table is not present")
    c.builder.insert(vr, id="VR-1", status="open", created_by="buyer", created_on="2026-10-08", kind="dispute",
                     vendor_id="V-0101", ap_invoice_id=inv, reason="price")
    listed = ok(cl.get("/ap-invoices", params={"vendor": "V-0101"}, headers=c.headers("ap_supervisor")), 200)["items"]
    assert [i["disputed"] for i in listed] == [True]


def test_ap_aging_buckets(company):
    c = company
    cl = client(c)
    invoice(cl, c, "V-0101", "AG-1", "2026-10-01", 100.0)          # due 10-31: current
    invoice(cl, c, "V-0101", "AG-2", "2026-08-20", 200.0)          # due 09-19: 19 days late
    invoice(cl, c, "V-0101", "AG-3", "2026-06-01", 300.0)          # due 07-01: 99 days late
    invoice(cl, c, "V-0101", "AG-4", "2026-06-01", 400.0, validate=False, approve=False)   # not validated: not AP
    rep = ok(cl.get("/reports/ap-aging", headers=c.headers("analyst")), 200)
    assert rep["totals"] == {"current": 100.0, "1-30": 200.0, "31-60": 0.0, "61-90": 0.0, "90+": 300.0, "total": 600.0}
    past = ok(cl.get("/reports/ap-aging", params={"as_of": "2026-09-30"}, headers=c.headers("analyst")), 200)
    assert past["totals"]["total"] == 0      # validated on 10-08
    assert cl.get("/reports/ap-aging", params={"as_of": "2026-13-01"}, headers=c.headers("analyst")).status_code == 422
    assert cl.get("/reports/nope", headers=c.headers("analyst")).status_code == 404
    ids = [r["id"] for r in ok(cl.get("/reports", headers=c.headers("analyst")), 200)]
    assert {"trial-balance", "control-ties", "ap-aging", "cash-position", "budget-vs-actual"} <= set(ids)


def test_three_way_match_relieves_grni_with_real_po_and_receipt(company):
    """Against purchasing/receiving's own tables: a price variance goes to IPV, GRNI is relieved
    at PO price, voiding undoes the match, and every control account stays tied."""
    pytest.importorskip("erp_service.domains.receiving")
    from erp_service.domains.masterdata import items, locations, warehouses
    from erp_service.domains.org import approval_limits
    c = company
    b = c.builder
    b.insert(warehouses, id="WH-MAIN", name="Main")
    b.insert(locations, id="WH-MAIN-A01", warehouse_id="WH-MAIN", name="A01", kind="stock")
    b.insert(items, id="BR-0750", description="Brass bar 3/4", type="raw", uom="ea", lot_controlled=0,
             standard_cost=11.0, lead_time_days=5, safety_stock=0, moq=0, order_multiple=0, active=1)
    b.insert(approval_limits, user_id="buyer", doc_type="purchase_order", limit_cents=1_000_000)
    cl = client(c)
    buyer, clerk = c.headers("buyer"), c.headers("ap_clerk")
    po = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "warehouse_id": "WH-MAIN",
                                              "lines": [{"item_id": "BR-0750", "qty": 10, "unit_price": 12}]},
                    headers=buyer))
    ok(cl.post(f"/purchase-orders/{po['id']}/send", headers=buyer))
    ok(cl.post("/receipts", json={"po_id": po["id"], "lines": [{"po_line": 1, "qty_received": 8,
                                                                 "location_id": "WH-MAIN-A01"}]},
               headers=c.headers("receiver")))
    ties(c)
    line = {"kind": "item", "po_line": 1, "item": "BR-0750", "qty": 8, "unit_price": 12.50}
    inv = ok(cl.post("/ap-invoices", json={"vendor": "V-0101", "invoice_no": "TW-1", "invoice_date": "2026-10-05",
                                           "po": po["id"], "lines": [line]}, headers=clerk))
    assert inv["match"]["result"] == "price_variance" and inv["match"]["lines"][0]["received"] == 8
    over = ok(cl.post("/ap-invoices", json={"vendor": "V-0101", "invoice_no": "TW-2", "invoice_date": "2026-10-05",
                                            "po": po["id"], "lines": [{**line, "qty": 10, "unit_price": 12}]},
                      headers=clerk))
    assert over["match"]["result"] == "quantity_variance"
    ok(cl.post(f"/ap-invoices/{inv['id']}/validate", headers=clerk))
    je = ok(cl.get(f"/ap-invoices/{inv['id']}", headers=clerk), 200)["links"]["journal_entry"][0]
    lines = {(l["account"], l["debit"], l["credit"]) for l in ok(cl.get(f"/journal-entries/{je}", headers=clerk), 200)["lines"]}
    assert lines == {("2050", 96.0, 0.0), ("5110", 4.0, 0.0), ("2000", 0.0, 100.0)}
    t = ties(c)
    assert t["grni"]["gl"] == 0 and t["ap"]["gl"] == -100.0
    # Everything received is now invoiced: the second invoice no longer matches on quantity.
    assert ok(cl.get(f"/ap-invoices/{over['id']}", headers=clerk), 200)["match"]["lines"][0]["previously_invoiced"] == 8
    ok(cl.post(f"/ap-invoices/{inv['id']}/void", headers=c.headers("ap_supervisor")))
    t = ties(c)
    assert t["grni"]["gl"] == -96.0 and t["ap"]["gl"] == 0


def test_dispute_by_vendor_invoice_number(company):
    c = company
    cl = client(c)
    vr = metadata.tables.get("vendor_requests")
    if vr is None:
        pytest.skip("purchasing's vendor_requests table is not present")
    inv = invoice(cl, c, "V-0101", "DN-7", "2026-10-01", 90.0)
    c.builder.insert(vr, id="VR-2", status="open", created_by="buyer", created_on="2026-10-08", kind="dispute",
                     vendor_id="V-0101", invoice_no="DN-7", reason="price")
    assert ok(cl.get(f"/ap-invoices/{inv}", headers=c.headers("ap_supervisor")), 200)["disputed"] is True
    c.builder.run("sys-setup", lambda tx: tx.conn.exec_driver_sql(
        "UPDATE vendor_requests SET status = 'answered' WHERE id = 'VR-2'"))
    assert ok(cl.get(f"/ap-invoices/{inv}", headers=c.headers("ap_supervisor")), 200)["disputed"] is False


def test_openapi_lists_finance_routes(company):
    cl = client(company)
    doc = cl.get("/openapi.json").json()
    paths = doc["paths"]
    for p in ("/vendors", "/vendors/{vendor_id}/bank-accounts", "/vendor-bank-accounts/{account_id}/verify",
              "/ap-invoices", "/ap-invoices/{invoice_id}/holds", "/holds/{hold_id}/release",
              "/payment-runs/{run_id}/invoices/{invoice_id}", "/payment-runs/{run_id}/release", "/payments",
              "/journal-entries/{entry_id}/reverse", "/periods/{period_id}/close", "/bank-accounts",
              "/reports/{report_id}"):
        assert p in paths, p
    assert paths["/payment-runs/{run_id}/release"]["post"]["operationId"] == "pay.release"
