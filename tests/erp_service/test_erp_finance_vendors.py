"""Vendors and the bank-detail change flow: pending → verified (old retired, remit repointed) |
rejected, withdrawals, masking in every read, the requester-cannot-verify control."""
from __future__ import annotations

import json

import pytest
from erp_finance_support import assert_refused_and_unchanged, client, finance_company, ok, refused


@pytest.fixture()
def company(tmp_path):
    return finance_company(tmp_path)


NEW = {"bank_name": "Lakeside Bank", "account_name": "Ohio Packaging", "account_number": "4455667788",
       "routing_number": "041000124", "source_ref": "MSG-1001", "note": "letter of 2026-10-07"}


def test_bank_change_verify_flow(company):
    c = company
    cl = client(c)
    sup = c.headers("ap_supervisor")
    req = ok(cl.post("/vendors/V-0102/bank-accounts", json=NEW, headers=sup))
    assert req["status"] == "pending" and req["account_number"] == "****7788" and req["routing_number"] == "****0124"
    # Full numbers appear in no read.
    for path in ("/vendors/V-0102", "/vendor-bank-accounts", "/vendor-bank-accounts?status=pending"):
        text = cl.get(path, headers=sup).text
        assert "4455667788" not in text and "041000124" not in text and "998877660102" not in text
    assert_refused_and_unchanged(c, cl, "POST", f"/vendor-bank-accounts/{req['id']}/verify", "ap_supervisor",
                                 "requester_cannot_approve", [("vendor_bank_account", req["id"]), ("vendor", "V-0102")])
    done = ok(cl.post(f"/vendor-bank-accounts/{req['id']}/verify", json={"note": "called number on file"},
                      headers=c.headers("ap_supervisor2")))
    assert done["status"] == "verified" and done["decided_by"] == "ap_supervisor2"
    v = ok(cl.get("/vendors/V-0102", headers=sup), 200)
    assert v["remit_account"] == req["id"]
    assert {a["id"]: a["status"] for a in v["bank_accounts"]} == {"VBA-0102": "retired", req["id"]: "verified"}
    refused(cl.post(f"/vendor-bank-accounts/{req['id']}/verify", headers=c.headers("ap_supervisor2")), "bad_status")


def test_reject_and_withdraw(company):
    c = company
    cl = client(c)
    sup, sup2 = c.headers("ap_supervisor"), c.headers("ap_supervisor2")
    spoof = ok(cl.post("/vendors/V-0101/bank-accounts", json={**NEW, "account_number": "12121212"}, headers=sup))
    ok(cl.post(f"/vendor-bank-accounts/{spoof['id']}/reject", json={"note": "number on file denies"}, headers=sup2))
    v = ok(cl.get("/vendors/V-0101", headers=sup), 200)
    assert v["remit_account"] == "VBA-0101"
    other = ok(cl.post("/vendors/V-0101/bank-accounts", json=NEW, headers=sup))
    assert ok(cl.post(f"/vendor-bank-accounts/{other['id']}/withdraw", headers=sup))["status"] == "withdrawn"
    assert ok(cl.post("/vendor-bank-accounts/VBA-0101/withdraw", headers=sup))["status"] == "retired"
    assert ok(cl.get("/vendors/V-0101", headers=sup), 200)["remit_account"] is None
    listed = ok(cl.get("/vendor-bank-accounts", params={"vendor": "V-0101"}, headers=sup), 200)["items"]
    assert sorted(a["status"] for a in listed) == ["rejected", "retired", "withdrawn"]
    # Roles: a buyer cannot touch bank details.
    refused(cl.post("/vendors/V-0101/bank-accounts", json=NEW, headers=c.headers("buyer")), "forbidden", 403)


def test_vendor_master_data(company):
    c = company
    cl = client(c)
    pm = c.headers("purchasing_manager")
    v = ok(cl.post("/vendors", json={"name": "Fresh Fittings", "terms": "NET45", "phone": "+1 555 0100"}, headers=pm))
    assert v["id"] == "V-0105" and v["status"] == "active" and v["bank_accounts"] == []
    refused(cl.post("/vendors", json={"id": "V-0101", "name": "Clash"}, headers=pm), "duplicate_vendor")
    # Bank fields cannot be patched; unknown terms and bad status are 422.
    for body in ({"remit_account": "VBA-0102"}, {"terms": "NET99"}, {"status": "gone"}, {"account_number": "1"}):
        r = cl.patch("/vendors/V-0101", json=body, headers=pm)
        assert r.status_code == 422, (body, r.text)
    ok(cl.patch("/vendors/V-0101", json={"quality_hold": True, "phone": "+1 555 9999"}, headers=pm), 200)
    got = ok(cl.get("/vendors", params={"q": "brass"}, headers=pm), 200)
    assert [x["id"] for x in got["items"]] == ["V-0101"] and got["items"][0]["quality_hold"] is True
    assert [x["id"] for x in ok(cl.get("/vendors", params={"status": "inactive"}, headers=pm), 200)["items"]] == ["V-0103"]
    assert cl.get("/vendors/V-9999", headers=pm).status_code == 404
    bad = cl.post("/vendors/V-0101/bank-accounts", json={**NEW, "routing_number": "12"}, headers=c.headers("ap_supervisor"))
    assert bad.status_code == 422
    assert "routing_number" in json.dumps(bad.json())
