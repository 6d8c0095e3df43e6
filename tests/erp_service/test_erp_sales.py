"""Sales and receivables: credit-hold control, FEFO shipments within open qty and stock,
invoices, cash and applications, the customer actor, reports, and AR/unapplied-cash ties."""
from __future__ import annotations

import pytest
from erp_sales_company import make_company
from sqlalchemy import select

from erp_service.domains import ledger
from erp_service.kernel.schema import audit_events
from erp_service.sim import World


@pytest.fixture()
def company(tmp_path):
    return make_company(tmp_path)


def client(company, world=None):
    from fastapi.testclient import TestClient

    from erp_service.http.app import create_app
    return TestClient(create_app(company.builder.db, World(world or {})))


def _ties(company) -> dict[str, bool]:
    with company.builder.db.transaction() as conn:
        tb = ledger.trial_balance(conn)
        assert tb["balanced"]
        return {t["control"]: t["tied"] for t in ledger.control_ties(conn)}


def _order(c, company, qty=10, customer="C-0101", **extra):
    r = c.post("/sales-orders", json={"customer_id": customer, "lines": [{"item_id": "FV-100", "qty": qty, **extra}]},
               headers=company.headers("order_entry"))
    assert r.status_code == 201, r.text
    return r.json()["data"]


def test_order_pricing_and_auto_release(company):
    c = client(company)
    so = _order(c, company, qty=10)
    assert so["status"] == "released" and so["lines"][0]["unit_price"] == 90.0 and so["ship_to_id"] == "C-0101-01"
    assert [h["to_status"] for h in so["history"]] == ["entered", "released"]
    big = _order(c, company, qty=50, customer="C-0100")
    assert big["lines"][0]["unit_price"] == 85.0 and big["status"] == "released"
    cheap = _order(c, company, qty=1, unit_price=50)
    assert cheap["status"] == "on_hold" and cheap["hold_reason"] == "pricing"
    r = c.post("/sales-orders", json={"customer_id": "C-0102", "lines": [{"item_id": "FV-100", "qty": 1}]},
               headers=company.headers("order_entry"))
    assert r.status_code == 409 and r.json()["code"] == "customer_inactive"
    r = c.post("/sales-orders", json={"customer_id": "C-0101", "lines": [{"item_id": "FV-100", "qty": 0}]},
               headers=company.headers("order_entry"))
    assert r.status_code == 422
    r = c.post("/sales-orders", json={"customer_id": "C-0101", "lines": [{"item_id": "NOPE", "qty": 1}]},
               headers=company.headers("order_entry"))
    assert r.status_code == 404
    cust = c.get("/customers/C-0101", headers=company.headers("analyst")).json()["data"]
    assert cust["open_orders"] == 900.0 and cust["available_credit"] == 4100.0


def test_credit_hold_control(company):
    c = client(company)
    _order(c, company, qty=40)                          # 3,600 of 5,000
    held = _order(c, company, qty=20)                   # +1,800 > limit
    assert held["status"] == "on_hold" and held["hold_reason"] == "credit"
    # Only the credit manager may release; order entry is refused, audited, nothing changes.
    r = c.post(f"/sales-orders/{held['id']}/release", headers=company.headers("order_entry"))
    assert r.status_code == 403
    with company.builder.db.transaction() as conn:
        ev = conn.execute(select(audit_events).order_by(audit_events.c.id.desc())).mappings().first()
    assert ev["outcome"] == "refused" and ev["action"] == "so.release_hold"
    assert c.get(f"/sales-orders/{held['id']}", headers=company.headers("analyst")).json()["data"]["status"] == "on_hold"
    # A held order cannot ship.
    r = c.post("/shipments", json={"so_id": held["id"]}, headers=company.headers("shipping"))
    assert r.status_code == 409 and r.json()["code"] == "on_hold"
    r = c.post(f"/sales-orders/{held['id']}/release", json={"note": "customer paid down"},
               headers=company.headers("credit_manager"))
    assert r.status_code == 201 and r.json()["data"]["status"] == "released"
    assert c.post(f"/sales-orders/{held['id']}/release", headers=company.headers("credit_manager")).json()["code"] == "bad_status"
    # Customer on credit hold: every new order holds.
    c.patch("/customers/C-0100", json={"credit_hold": True}, headers=company.headers("credit_manager"))
    assert _order(c, company, qty=1, customer="C-0100")["hold_reason"] == "credit"
    assert c.patch("/customers/C-0100", json={"credit_limit": 1}, headers=company.headers("order_entry")).status_code == 403


def test_ship_fefo_invoice_cash_and_ties(company):
    c = client(company)
    so = _order(c, company, qty=25)
    ship = company.headers("shipping")
    r = c.post("/shipments", json={"so_id": so["id"], "lines": [{"line_no": 1, "qty": 26}]}, headers=ship)
    assert r.status_code == 409 and r.json()["code"] == "over_open_qty"
    r = c.post("/shipments", json={"so_id": so["id"], "lines": [{"line_no": 1, "qty": 22}]}, headers=ship)
    assert r.status_code == 201, r.text
    sh = r.json()["data"]
    assert [(l["lot_no"], l["qty"]) for l in sh["lines"]] == [("L-EARLY", 20.0), ("L-LATE", 2.0)]
    assert sh["cost"] == 880.0
    order = c.get(f"/sales-orders/{so['id']}", headers=ship).json()["data"]
    assert order["status"] == "partially_shipped" and order["lines"][0]["open_qty"] == 3.0
    inv = c.post(f"/shipments/{sh['id']}/invoice", headers=ship).json()["data"]
    assert inv["subtotal"] == 1980.0 and inv["tax"] == 143.55 and inv["total"] == 2123.55
    assert inv["due_date"] == "2026-11-07"
    assert c.post(f"/shipments/{sh['id']}/invoice", headers=ship).json()["code"] == "already_invoiced"
    sh2 = c.post("/shipments", json={"so_id": so["id"]}, headers=ship).json()["data"]
    assert sh2["lines"][0]["qty"] == 3.0
    inv2 = c.post(f"/shipments/{sh2['id']}/invoice", headers=ship).json()["data"]
    assert c.get(f"/sales-orders/{so['id']}", headers=ship).json()["data"]["status"] == "invoiced"
    # Stock is never exceeded.
    so2 = _order(c, company, qty=40, customer="C-0100")
    r = c.post("/shipments", json={"so_id": so2["id"]}, headers=ship)
    assert r.status_code == 409 and r.json()["code"] == "insufficient_stock"
    assert _ties(company) == {**_ties(company), "ar": True, "unapplied_cash": True, "inventory": True}

    # Cash: the parent pays for the subsidiary; over-application is refused.
    ar = company.headers("ar_clerk")
    rc = c.post("/cash-receipts", json={"customer_id": "C-0100", "amount": 2500, "reference": inv["id"]},
                headers=ar).json()["data"]
    assert rc["status"] == "unapplied" and _ties(company)["unapplied_cash"]
    r = c.post(f"/cash-receipts/{rc['id']}/apply", json={"applications": [{"invoice_id": inv["id"], "amount": 2200}]},
               headers=ar)
    assert r.status_code == 409 and r.json()["code"] == "over_invoice_open"
    r = c.post(f"/cash-receipts/{rc['id']}/apply", json={"applications": [
        {"invoice_id": inv["id"], "amount": 2123.55}, {"invoice_id": inv2["id"], "amount": 376.46}]}, headers=ar)
    assert r.status_code == 409 and r.json()["code"] in ("over_unapplied", "over_invoice_open")
    r = c.post(f"/cash-receipts/{rc['id']}/apply", json={"applications": [
        {"invoice_id": inv["id"], "amount": 2123.55}, {"invoice_id": inv2["id"], "amount": 100}]}, headers=ar)
    assert r.status_code == 201, r.text
    d = r.json()["data"]
    assert d["status"] == "partially_applied" and d["unapplied"] == 276.45
    assert c.get(f"/ar-invoices/{inv['id']}", headers=ar).json()["data"]["status"] == "paid"
    assert c.get(f"/ar-invoices/{inv2['id']}", headers=ar).json()["data"]["status"] == "partially_paid"
    other = c.post("/cash-receipts", json={"customer_id": "C-0102", "amount": 10}, headers=ar).json()["data"]
    r = c.post(f"/cash-receipts/{other['id']}/apply", json={"applications": [{"invoice_id": inv2["id"], "amount": 1}]},
               headers=ar)
    assert r.status_code == 409 and r.json()["code"] == "customer_mismatch"
    assert c.post("/cash-receipts", json={"customer_id": "C-0100", "amount": 1}, headers=ship).status_code == 403
    ties = _ties(company)
    assert ties["ar"] and ties["unapplied_cash"] and ties["inventory"]

    aging = c.get("/reports/ar-aging", headers=ar).json()["data"]
    assert aging["totals"]["total"] == round(inv2["total"] - 100, 2)
    assert aging["totals"]["unapplied_cash"] == 286.45
    late = c.get("/reports/ar-aging", params={"as_of": "2026-12-20"}, headers=ar).json()["data"]
    assert late["invoices"][0]["bucket"] == "31_60"
    margin = c.get("/reports/sales-margin", headers=ar).json()["data"]
    assert margin["total_revenue"] == 2250.0 and margin["total_cost"] == 1000.0 and margin["total_margin"] == 1250.0
    assert c.get("/reports/sales-margin", params={"bogus": 1}, headers=ar).status_code == 422


def test_cancel_allocate_and_line_update(company):
    c = client(company)
    oe = company.headers("order_entry")
    so = _order(c, company, qty=10)
    r = c.post(f"/sales-orders/{so['id']}/allocate", headers=oe)
    assert r.status_code == 201 and r.json()["data"]["status"] == "allocated"
    so2 = _order(c, company, qty=45, customer="C-0100")
    r = c.post(f"/sales-orders/{so2['id']}/allocate", headers=oe)
    assert r.status_code == 409 and r.json()["code"] == "insufficient_stock"
    r = c.patch(f"/sales-orders/{so['id']}/lines/1", json={"qty": 60}, headers=oe)
    assert r.json()["data"]["status"] == "on_hold"          # re-checked: over the limit now
    assert r.json()["data"]["lines"][0]["qty_allocated"] == 0
    r = c.post(f"/sales-orders/{so['id']}/cancel", headers=oe)
    assert r.json()["data"]["status"] == "cancelled"
    assert c.post(f"/sales-orders/{so['id']}/cancel", headers=oe).json()["code"] == "bad_status"
    assert c.patch(f"/sales-orders/{so['id']}/lines/1", json={"qty": 1}, headers=oe).json()["code"] == "not_editable"


def test_customer_actor_pays_by_profile(company):
    world = {"customers": {
        "C-0101": {"pays": "short", "short_pct": 10, "short_reason": "two valves damaged", "payer": "C-0100",
                   "orders": [{"on": "2026-10-09", "customer_po": "VP-77", "lines": [{"item_id": "FV-100", "qty": 5}]}]},
    }}
    c = client(company, world)
    so = _order(c, company, qty=10)
    sh = c.post("/shipments", json={"so_id": so["id"]}, headers=company.headers("shipping")).json()["data"]
    inv = c.post(f"/shipments/{sh['id']}/invoice", headers=company.headers("shipping")).json()["data"]
    company.builder.advance("2026-10-09", World(world))
    po_mail = c.get("/inbox", params={"box": "sales"}, headers=company.headers("order_entry")).json()["data"]["items"]
    assert [m["subject"] for m in po_mail] == ["Purchase order VP-77"] and po_mail[0]["attachment_count"] == 1
    assert c.get("/cash-receipts", headers=company.headers("ar_clerk")).json()["data"]["total"] == 0
    company.builder.advance(inv["due_date"], World(world))   # 2026-11-07 is a Saturday: paid on Monday
    assert c.get("/cash-receipts", headers=company.headers("ar_clerk")).json()["data"]["total"] == 0
    company.builder.advance("2026-11-09", World(world))
    rcs = c.get("/cash-receipts", headers=company.headers("ar_clerk")).json()["data"]["items"]
    assert len(rcs) == 1 and rcs[0]["customer_id"] == "C-0100" and rcs[0]["reference"] == inv["id"]
    assert rcs[0]["amount"] == round(inv["total"] * 0.9, 2) and rcs[0]["created_by"] == "sys-bank"
    advice = c.get("/inbox", params={"box": "ar"}, headers=company.headers("ar_clerk")).json()["data"]["items"]
    assert advice and advice[0]["subject"] == f"Remittance advice {inv['id']}"
    company.builder.advance("2026-11-12", World(world))      # paid once only
    assert c.get("/cash-receipts", headers=company.headers("ar_clerk")).json()["data"]["total"] == 1
    ties = _ties(company)
    assert ties["ar"] and ties["unapplied_cash"]


def test_warehouse_reports_and_weekend_orders(company):
    world = {"warehouse": {"reports": [{"on": "2026-10-10", "subject": "Cycle count A01",
                                        "body": "Counted 48 FV-100.", "lines": ["FV-100 L-LATE 28", "FV-100 L-EARLY 20"]}]},
             "customers": {"C-0101": {"pays": "never", "orders": [{"on": "2026-10-11", "lines": [
                 {"item_id": "FV-100", "qty": 2}]}]}}}
    c = client(company, world)
    company.builder.advance("2026-10-12", World(world))   # Sat and Sun skipped: both arrive Monday
    company.builder.advance("2026-10-14", World(world))   # and only once
    wh = c.get("/inbox", params={"box": "warehouse"}, headers=company.headers("inventory_controller")).json()["data"]
    assert [m["subject"] for m in wh["items"]] == ["Cycle count A01"] and wh["items"][0]["received_on"] == "2026-10-12"
    pdf = c.get(f"/inbox/{wh['items'][0]['id']}/attachments/1", headers=company.headers("inventory_controller"))
    from erp_service.domains.comms import pdf_text
    assert "FV-100 L-LATE 28" in pdf_text(pdf.content)
    sales = c.get("/inbox", params={"box": "sales"}, headers=company.headers("order_entry")).json()["data"]
    assert sales["total"] == 1 and sales["items"][0]["subject"] == "Purchase order C-0101-PO-1"


def test_out_of_range_input_is_422_not_500(company):
    c = client(company)
    oe = company.headers("order_entry")
    r = c.post("/sales-orders", json={"customer_id": "C-0101", "lines": [
        {"item_id": "FV-100", "qty": 999999999, "unit_price": 999999999999.99}]}, headers=oe)
    assert r.status_code == 422
    assert c.patch("/sales-orders/SO-1/lines/99999999999999999999999", json={"qty": 1}, headers=oe).status_code == 422
    assert c.get("/inbox/MSG-1/attachments/99999999999999999999999", headers=oe).status_code == 422
    assert c.get("/audit", params={"since_id": 10**30}, headers=oe).status_code == 422
