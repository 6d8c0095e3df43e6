"""Allocation with backorders (issue 35): the free stock of the order's warehouse is reserved,
the rest of each line waits as a backorder, and allocating again fills it from freed stock."""
from __future__ import annotations

import pytest
from erp_sales_company import make_company
from sqlalchemy import select

from erp_service.kernel.schema import audit_events
from erp_service.sim import World


@pytest.fixture()
def company(tmp_path):
    return make_company(tmp_path)


def _client(company):
    from fastapi.testclient import TestClient

    from erp_service.http.app import create_app
    return TestClient(create_app(company.builder.db, World({})))


def _order(c, company, qty, customer, warehouse="WH-MAIN"):
    r = c.post("/sales-orders", json={"customer_id": customer, "warehouse_id": warehouse,
                                      "lines": [{"item_id": "FV-100", "qty": qty}]},
               headers=company.headers("order_entry"))
    assert r.status_code == 201, r.text
    return r.json()["data"]


def test_backorder_reserves_the_free_stock_and_fills_later(company):
    c = _client(company)
    oe = company.headers("order_entry")
    first = _order(c, company, 10, "C-0101")                    # stock is 50 in WH-MAIN
    assert c.post(f"/sales-orders/{first['id']}/allocate", headers=oe).status_code == 201
    second = _order(c, company, 45, "C-0100")
    refused = c.post(f"/sales-orders/{second['id']}/allocate", headers=oe)
    assert refused.status_code == 409 and refused.json()["code"] == "insufficient_stock"
    assert c.get(f"/sales-orders/{second['id']}", headers=oe).json()["data"]["status"] == "released"

    r = c.post(f"/sales-orders/{second['id']}/allocate", json={"backorder": True}, headers=oe)
    assert r.status_code == 201, r.text
    so = r.json()["data"]
    assert so["status"] == "allocated"
    assert (so["lines"][0]["qty_allocated"], so["lines"][0]["qty_backordered"]) == (40.0, 5.0)
    # Allocating again without new stock changes nothing; the backorder stays.
    so = c.post(f"/sales-orders/{second['id']}/allocate", json={"backorder": True}, headers=oe).json()["data"]
    assert (so["lines"][0]["qty_allocated"], so["lines"][0]["qty_backordered"]) == (40.0, 5.0)
    # Stock freed by a cancelled order fills the backorder.
    assert c.post(f"/sales-orders/{first['id']}/cancel", headers=oe).status_code == 201
    so = c.post(f"/sales-orders/{second['id']}/allocate", json={"backorder": True}, headers=oe).json()["data"]
    assert (so["lines"][0]["qty_allocated"], so["lines"][0]["qty_backordered"]) == (45.0, 0.0)
    # Nothing left on backorder: a further allocation is a lifecycle refusal, as before.
    again = c.post(f"/sales-orders/{second['id']}/allocate", json={"backorder": True}, headers=oe)
    assert again.status_code == 409 and again.json()["code"] == "bad_status"
    with company.builder.db.transaction() as conn:
        actions = [r.action for r in conn.execute(select(audit_events.c.action).where(
            audit_events.c.object_id == second["id"], audit_events.c.outcome == "ok"))]
    assert actions.count("so.allocate") == 3


def test_backorder_in_another_warehouse_reserves_nothing_there(company):
    """Stock of another warehouse is never reserved: the order's warehouse decides."""
    c = _client(company)
    oe = company.headers("order_entry")
    from erp_service.domains.masterdata import warehouses
    company.builder.insert(warehouses, id="WH-EAST", name="East")
    so = _order(c, company, 5, "C-0101", warehouse="WH-EAST")
    so = c.post(f"/sales-orders/{so['id']}/allocate", json={"backorder": True}, headers=oe).json()["data"]
    assert (so["status"], so["lines"][0]["qty_allocated"], so["lines"][0]["qty_backordered"]) == ("allocated", 0.0, 5.0)


def test_backorder_is_refused_on_hold_and_replayed_by_key(company):
    c = _client(company)
    oe = company.headers("order_entry")
    held = c.post("/sales-orders", json={"customer_id": "C-0101", "lines": [{"item_id": "FV-100", "qty": 1,
                                                                              "unit_price": 10}]}, headers=oe)
    assert held.json()["data"]["status"] == "on_hold"
    r = c.post(f"/sales-orders/{held.json()['data']['id']}/allocate", json={"backorder": True}, headers=oe)
    assert r.status_code == 409 and r.json()["code"] == "on_hold"
    so = _order(c, company, 60, "C-0100")
    keyed = company.headers("order_entry", key="alloc-1")
    a = c.post(f"/sales-orders/{so['id']}/allocate", json={"backorder": True}, headers=keyed)
    b = c.post(f"/sales-orders/{so['id']}/allocate", json={"backorder": True}, headers=keyed)
    assert a.status_code == b.status_code == 201 and a.json() == b.json()
    assert a.json()["data"]["lines"][0]["qty_backordered"] == 10.0
    # A role without so.allocate cannot allocate.
    r = c.post(f"/sales-orders/{so['id']}/allocate", json={"backorder": True}, headers=company.headers("ap_clerk"))
    assert r.status_code == 403
