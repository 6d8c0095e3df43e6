"""Adjustments above the company's approval threshold wait for approval (D3): nothing moves while
pending; another user approves (stock and value move that day) or rejects; the preparer cannot
approve; without the setting every adjustment posts at once, as before."""
from __future__ import annotations

import pytest
from erp_finance_support import client, ok, refused, ties
from erp_supply_support import supply_company

from erp_service.domains.org import company as settings

BR = {"item_id": "BR-0750", "warehouse_id": "WH-MAIN", "location_id": "WH-MAIN-A01"}  # $4.00 standard cost


@pytest.fixture()
def erp(tmp_path):
    c = supply_company(tmp_path)
    c.cl = client(c)
    return c


def _adjust(c, qty, user="inventory_controller", reason="count"):
    return c.cl.post("/inventory/adjustments", json={**BR, "qty": qty, "reason": reason}, headers=c.headers(user))


def _on_hand(c) -> float:
    rows = ok(c.cl.get("/inventory/on-hand", params={"item_id": "BR-0750"}, headers=c.headers("analyst")), 200)
    return sum(r["qty"] for r in rows["items"] if r.get("location_id") == "WH-MAIN-A01")


def test_without_the_setting_every_adjustment_posts_at_once(erp):
    big = ok(_adjust(erp, 400))                                     # $1,600.00
    assert big["status"] == "posted" and big["je_id"] and _on_hand(erp) == 400


def test_above_the_threshold_an_adjustment_waits_then_posts_when_someone_else_approves(erp):
    erp.builder.insert(settings, key="inventory_adjustment_approval_cents", value="50000")  # $500.00
    ok(_adjust(erp, 200, user="admin", reason="found"))              # $800 by the admin: pending too
    small = ok(_adjust(erp, 125))                                   # $500.00: at the threshold, posts
    assert small["status"] == "posted" and _on_hand(erp) == 125
    big = ok(_adjust(erp, -126))                                    # $504.00 down: waits
    assert big["status"] == "pending_approval" and big["je_id"] is None and _on_hand(erp) == 125
    ties(erp)
    assert erp.cl.post(f"/inventory/adjustments/{big['id']}/approve",
                       headers=erp.headers("inventory_controller")).status_code == 403
    refused(erp.cl.post(f"/inventory/adjustments/{big['id']}/approve", headers=erp.headers("controller")),
            "insufficient_stock")                                   # 126 out of 125: the hard control holds
    ok(_adjust(erp, 1))
    approved = ok(erp.cl.post(f"/inventory/adjustments/{big['id']}/approve", json={"note": "recounted twice"},
                              headers=erp.headers("controller")))
    assert approved["status"] == "posted" and approved["je_id"] and approved["value"] == -504.0
    assert _on_hand(erp) == 0
    assert [h["to_status"] for h in approved["history"]][-1] == "posted"
    refused(erp.cl.post(f"/inventory/adjustments/{big['id']}/approve", headers=erp.headers("controller")),
            "bad_status")
    ties(erp)


def test_the_preparer_cannot_approve_and_a_rejection_moves_nothing(erp):
    erp.builder.insert(settings, key="inventory_adjustment_approval_cents", value="50000")
    mine = ok(_adjust(erp, 300, user="admin"))
    refused(erp.cl.post(f"/inventory/adjustments/{mine['id']}/approve", headers=erp.headers("admin")),
            "preparer_cannot_approve")
    rejected = ok(erp.cl.post(f"/inventory/adjustments/{mine['id']}/reject", json={"note": "recount first"},
                              headers=erp.headers("controller")))
    assert rejected["status"] == "rejected" and _on_hand(erp) == 0
    refused(erp.cl.post(f"/inventory/adjustments/{mine['id']}/approve", headers=erp.headers("controller")),
            "bad_status")
    refused(erp.cl.post(f"/inventory/adjustments/{mine['id']}/reject", headers=erp.headers("controller")),
            "bad_status")
    ties(erp)
