"""Receiving and inventory: receipts only against sent POs, lot/expiry capture, refusals,
substitution, the over-receipt ceiling, GRNI/inventory/PPV postings that tie, reversal, invoice
matching relieving GRNI, transfers, adjustments, on-hand never negative, and the reports."""
from __future__ import annotations

import pytest
from erp_finance_support import assert_refused_and_unchanged, client, ok, refused, ties
from erp_supply_support import sent_po, supply_company


@pytest.fixture()
def company(tmp_path):
    return supply_company(tmp_path)


def _receive(cl, c, po_id, lines, **extra):
    return cl.post("/receipts", json={"po_id": po_id, "packing_slip": "PS-1", "lines": lines, **extra},
                   headers=c.headers("receiver"))


def test_receipt_only_against_sent_po(company):
    c = company
    cl = client(c)
    draft = ok(cl.post("/purchase-orders", json={"vendor_id": "V-0101", "lines": [{"item_id": "BR-0750", "qty": 10}]},
                       headers=c.headers("buyer")))
    assert_refused_and_unchanged(c, cl, "POST", "/receipts", "receiver", "po_not_sent",
                                 [("purchase_order", draft["id"])],
                                 body={"po_id": draft["id"], "lines": [{"po_line": 1, "qty_received": 10}]})
    assert cl.post("/receipts", json={"po_id": draft["id"], "lines": [{"po_line": 1, "qty_received": 1}]},
                   headers=c.headers("buyer")).status_code == 403
    assert ties(c)["grni"]["gl"] == 0


def test_receipt_posting_grni_inventory_ppv_and_ties(company):
    c = company
    cl = client(c)
    po = sent_po(cl, c, qty=200)                       # agreement price 4.20, standard 4.00
    assert po["lines"][0]["unit_price"] == 4.20
    rcv = ok(_receive(cl, c, po["id"], [{"po_line": 1, "qty_received": 150, "qty_refused": 10,
                                          "refusal_reason": "damaged", "location_id": "WH-MAIN-A01"}]))
    assert rcv["status"] == "posted" and rcv["lines"][0]["value"] == 630.0 and rcv["lines"][0]["std_value"] == 600.0
    t = ties(c)
    assert t["grni"]["gl"] == -630.0 and t["inventory"]["gl"] == 600.0
    po_now = ok(cl.get(f"/purchase-orders/{po['id']}", headers=c.headers("buyer")), 200)
    assert po_now["status"] == "partially_received" and po_now["lines"][0]["qty_received"] == 150
    assert po_now["lines"][0]["qty_refused"] == 10 and po_now["links"]["receipt"] == [rcv["id"]]
    oh = ok(cl.get("/inventory/on-hand", params={"item_id": "BR-0750"}, headers=c.headers("analyst")), 200)
    assert [(r["location_id"], r["qty"], r["value"]) for r in oh["items"]] == [("WH-MAIN-A01", 150.0, 600.0)]
    # refusal without a reason is malformed
    assert _receive(cl, c, po["id"], [{"po_line": 1, "qty_refused": 5}]).status_code == 422
    # the system ceiling: 10 % over the ordered 200
    assert_refused_and_unchanged(c, cl, "POST", "/receipts", "receiver", "over_receipt_ceiling",
                                 [("purchase_order", po["id"])],
                                 body={"po_id": po["id"], "lines": [{"po_line": 1, "qty_received": 80}]})
    assert_refused_and_unchanged(c, cl, "POST", f"/purchase-orders/{po['id']}/cancel", "buyer", "has_receipts",
                                 [("purchase_order", po["id"])])
    open_pos = ok(cl.get("/reports/open-purchase-orders", params={"as_of": "2026-10-25"}, headers=c.headers("analyst")),
                  200)
    assert [(r["po_id"], r["open_qty"], r["open_value"], r["late"]) for r in open_pos["rows"]] == [
        (po["id"], 50.0, 210.0, True)]
    ok(_receive(cl, c, po["id"], [{"po_line": 1, "qty_received": 50}]))
    assert ok(cl.get("/reports/open-purchase-orders", headers=c.headers("analyst")), 200)["rows"] == []
    done = ok(cl.get(f"/purchase-orders/{po['id']}", headers=c.headers("buyer")), 200)
    assert done["status"] == "received"
    refused(_receive(cl, c, po["id"], [{"po_line": 1, "qty_received": 1}]), "po_not_open")
    t = ties(c)
    assert t["grni"]["gl"] == -840.0 and t["inventory"]["gl"] == 800.0
    rep = ok(cl.get("/reports/grni", headers=c.headers("analyst")), 200)
    assert rep["total"] == 840.0 and rep["rows"][0]["po_id"] == po["id"]


def test_lots_substitution_and_reversal(company):
    c = company
    cl = client(c)
    po = sent_po(cl, c, qty=100, item="SL-0101", vendor="V-0104", unit_price=1.60)
    bad = _receive(cl, c, po["id"], [{"po_line": 1, "qty_received": 100}])
    assert bad.status_code == 422 and bad.json()["code"] == "lot_required"
    rcv = ok(_receive(cl, c, po["id"], [
        {"po_line": 1, "qty_received": 60, "lot_no": "L-A", "expiry": "2027-03-31", "location_id": "WH-MAIN-A01"},
        {"po_line": 1, "qty_received": 40, "item_id": "SL-0102", "lot_no": "L-V", "expiry": "2027-06-30"}]))
    assert [l["substitution"] for l in rcv["lines"]] == [False, True]
    # substitute valued at its own standard cost (1.80), GRNI at the PO price (1.60)
    t = ties(c)
    assert t["grni"]["gl"] == -160.0 and t["inventory"]["gl"] == 60 * 1.5 + 40 * 1.8
    lots = ok(cl.get("/lots", params={"item_id": "SL-0101"}, headers=c.headers("analyst")), 200)
    assert [(l["lot_no"], l["expiry"], l["vendor_id"]) for l in lots["items"]] == [("L-A", "2027-03-31", "V-0104")]
    assert ok(cl.get(f"/purchase-orders/{po['id']}", headers=c.headers("buyer")), 200)["status"] == "received"
    # reversal needs a reason; then stock, GRNI, PPV and PO quantities all come back
    assert cl.post(f"/receipts/{rcv['id']}/reverse", json={}, headers=c.headers("receiver")).status_code == 422
    rev = ok(cl.post(f"/receipts/{rcv['id']}/reverse", json={"reason": "wrong PO"}, headers=c.headers("receiver")))
    assert rev["status"] == "reversed" and len(rev["links"]["journal_entry"]) == 2
    t = ties(c)
    assert t["grni"]["gl"] == 0 and t["inventory"]["gl"] == 0
    po_now = ok(cl.get(f"/purchase-orders/{po['id']}", headers=c.headers("buyer")), 200)
    assert po_now["status"] == "sent" and po_now["lines"][0]["qty_received"] == 0
    assert_refused_and_unchanged(c, cl, "POST", f"/receipts/{rcv['id']}/reverse", "receiver", "bad_status",
                                 [("receipt", rcv["id"])], body={"reason": "again"})


def test_reversal_refused_when_stock_consumed_or_invoiced(company):
    c = company
    cl = client(c)
    po = sent_po(cl, c, qty=100)
    rcv = ok(_receive(cl, c, po["id"], [{"po_line": 1, "qty_received": 100, "location_id": "WH-MAIN-A01"}]))
    ok(cl.post("/inventory/transfers", json={"item_id": "BR-0750", "qty": 30, "from_warehouse": "WH-MAIN",
                                             "from_location": "WH-MAIN-A01", "to_warehouse": "WH-EAST",
                                             "to_location": "WH-EAST-01"}, headers=c.headers("inventory_controller")))
    assert_refused_and_unchanged(c, cl, "POST", f"/receipts/{rcv['id']}/reverse", "receiver", "insufficient_stock",
                                 [("receipt", rcv["id"]), ("purchase_order", po["id"])], body={"reason": "x"})
    ok(cl.post("/inventory/transfers", json={"item_id": "BR-0750", "qty": 30, "from_warehouse": "WH-EAST",
                                             "from_location": "WH-EAST-01", "to_warehouse": "WH-MAIN",
                                             "to_location": "WH-MAIN-A01"}, headers=c.headers("inventory_controller")))
    # an invoice validated against the PO line relieves GRNI; the receipt can no longer be reversed
    inv = ok(cl.post("/ap-invoices", json={
        "vendor": "V-0101", "invoice_no": "BW-55", "invoice_date": "2026-10-08", "po": po["id"],
        "lines": [{"kind": "item", "po_line": 1, "qty": 100, "unit_price": 4.25, "description": "bar"}]},
        headers=c.headers("ap_clerk")))
    ok(cl.post(f"/ap-invoices/{inv['id']}/validate", headers=c.headers("ap_clerk")))
    t = ties(c)
    assert t["grni"]["gl"] == 0 and t["grni"]["tied"]
    assert_refused_and_unchanged(c, cl, "POST", f"/receipts/{rcv['id']}/reverse", "receiver", "has_invoices",
                                 [("receipt", rcv["id"])], body={"reason": "x"})
    assert ok(cl.get("/reports/grni", headers=c.headers("analyst")), 200)["total"] == 0
    assert ok(cl.get(f"/purchase-orders/{po['id']}", headers=c.headers("buyer")), 200)["links"]["ap_invoice"] == [inv["id"]]


def test_adjustments_transfers_never_negative(company):
    c = company
    cl = client(c)
    h = c.headers("inventory_controller")
    adj = ok(cl.post("/inventory/adjustments", json={"item_id": "BR-0750", "warehouse_id": "WH-MAIN",
                                                     "location_id": "WH-MAIN-A02", "qty": 25, "reason": "found"},
                     headers=h))
    assert adj["value"] == 100.0 and adj["links"]["journal_entry"]
    assert ties(c)["inventory"]["gl"] == 100.0
    refused(cl.post("/inventory/adjustments", json={"item_id": "BR-0750", "warehouse_id": "WH-MAIN",
                                                    "location_id": "WH-MAIN-A02", "qty": -26, "reason": "damage"},
                    headers=h), "insufficient_stock")
    refused(cl.post("/inventory/transfers", json={"item_id": "BR-0750", "qty": 30, "from_warehouse": "WH-MAIN",
                                                  "from_location": "WH-MAIN-A02", "to_warehouse": "WH-EAST"},
                    headers=h), "insufficient_stock")
    assert cl.post("/inventory/adjustments", json={"item_id": "BR-0750", "warehouse_id": "WH-MAIN", "qty": 1,
                                                   "reason": "because"}, headers=h).status_code == 422
    assert cl.post("/inventory/adjustments", json={"item_id": "SL-0101", "warehouse_id": "WH-MAIN", "qty": 1,
                                                   "reason": "found"}, headers=h).status_code == 422
    assert cl.post("/inventory/adjustments", json={"item_id": "BR-0750", "warehouse_id": "WH-MAIN", "qty": 1,
                                                   "reason": "found"}, headers=c.headers("buyer")).status_code == 403
    ok(cl.post("/inventory/adjustments", json={"item_id": "BR-0750", "warehouse_id": "WH-MAIN",
                                               "location_id": "WH-MAIN-A02", "qty": -5, "reason": "damage"}, headers=h))
    oh = ok(cl.get("/reports/on-hand", headers=c.headers("analyst")), 200)
    assert oh["total_value"] == 80.0 and oh["rows"][0]["qty"] == 20
    ties(c)
