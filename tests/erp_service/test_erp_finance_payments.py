"""Payment runs: end to end with the controller actor and the bank clearing through sim.advance,
every hard control of paying (refused, audited, nothing changed), re-checks at release and the
return path out of an approved run."""
from __future__ import annotations

import pytest
from erp_finance_support import (
    OPENING_CASH,
    assert_refused_and_unchanged,
    client,
    finance_company,
    invoice,
    ok,
    refused,
    ties,
)

from erp_service.sim import World, advance

WORLD = {"payment_run_approver": {"user": "controller", "approve_after_days": 1, "release": True}}


@pytest.fixture()
def company(tmp_path):
    return finance_company(tmp_path)


def test_payment_run_end_to_end_with_approver_and_bank(company):
    c = company
    cl = client(c, WORLD)
    sup = c.headers("ap_supervisor")
    past_due = invoice(cl, c, "V-0101", "BW-1001", "2026-08-20", 1200.00)
    disc = invoice(cl, c, "V-0102", "OP-77", "2026-10-01", 5000.00)   # 2/10: discount date 10-11
    held = invoice(cl, c, "V-0101", "BW-1002", "2026-09-01", 300.00)
    ok(cl.post(f"/ap-invoices/{held}/holds", json={"reason": "price", "note": "price above PO"}, headers=sup))
    disputed = invoice(cl, c, "V-0101", "BW-1003", "2026-09-02", 400.00)
    ok(cl.post(f"/ap-invoices/{disputed}/holds", json={"reason": "dispute"}, headers=sup))
    inv = ok(cl.get(f"/ap-invoices/{disputed}", headers=sup), 200)
    assert inv["disputed"] is True and inv["status"] == "on_hold"
    assert ok(cl.get(f"/ap-invoices/{past_due}", headers=sup), 200)["disputed"] is False

    run = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08", "bank_account": "OPER"}, headers=sup))
    rid = run["id"]
    ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": past_due}, headers=sup))
    detail = ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": disc}, headers=sup))
    by_vendor = {p["vendor"]: p for p in detail["payments"]}
    assert by_vendor["V-0102"]["discount"] == 100.00 and by_vendor["V-0102"]["amount"] == 4900.00
    assert by_vendor["V-0102"]["paid_to_account"] == "****0102"
    assert detail["total"] == 6100.00
    for bad in (held, disputed):
        assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/invoices", "ap_supervisor", "on_hold",
                                     [("payment_run", rid), ("ap_invoice", bad)], body={"invoice": bad})
    ok(cl.post(f"/payment-runs/{rid}/submit", headers=sup))
    ties(c)

    cash = ok(cl.get("/reports/cash-position", headers=sup), 200)["accounts"][0]
    assert cash["balance"] == OPENING_CASH / 100 and cash["scheduled_total"] == 6100.00

    # Friday: the controller approves and releases; Monday: the bank clears.
    days = advance(c.builder.db, World(WORLD), "2026-10-09")
    assert days[-1]["actions"] == 2 and days[-1]["refusals"] == 0
    run = ok(cl.get(f"/payment-runs/{rid}", headers=sup), 200)
    assert run["status"] == "released" and run["approved_by"] == "controller"
    assert {p["status"] for p in run["payments"]} == {"released"}
    assert ok(cl.get(f"/ap-invoices/{past_due}", headers=sup), 200)["status"] == "paid"
    assert ok(cl.get(f"/ap-invoices/{disc}", headers=sup), 200)["open"] == 0
    cash = ok(cl.get("/reports/cash-position", headers=sup), 200)["accounts"][0]
    assert cash["balance"] == OPENING_CASH / 100 - 6100.00
    assert cash["statement_balance"] == OPENING_CASH / 100 and cash["released_not_cleared_total"] == 6100.00
    ties(c)

    advance(c.builder.db, World(WORLD), "2026-10-12")
    pays = ok(cl.get("/payments", params={"run": rid}, headers=sup), 200)["items"]
    assert {p["status"] for p in pays} == {"cleared"} and {p["cleared_on"] for p in pays} == {"2026-10-12"}
    lines = ok(cl.get("/bank-statement-lines", params={"kind": "payment"}, headers=sup), 200)["items"]
    assert sorted(l["amount"] for l in lines) == [-4900.00, -1200.00]
    accts = ok(cl.get("/bank-accounts", headers=sup), 200)["items"]
    assert accts[0]["balance"] == accts[0]["statement_balance"] == OPENING_CASH / 100 - 6100.00
    tb = ok(cl.get("/reports/trial-balance", headers=sup), 200)
    assert tb["balanced"]
    rows = {r["account"]: r for r in tb["rows"]}
    assert rows["5500"]["credit"] == 100.00          # discount taken
    all_ties = ties(c)
    assert all_ties["ap"]["tied"] and all_ties["ap"]["gl"] == -700.00   # held + disputed still owed
    aging = ok(cl.get("/reports/ap-aging", headers=sup), 200)
    assert aging["totals"]["total"] == 700.00


def test_hard_controls_on_adding_invoices(company):
    c = company
    cl = client(c)
    sup = c.headers("ap_supervisor")
    rid = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-09"}, headers=sup))["id"]
    matched = invoice(cl, c, "V-0101", "M-1", "2026-09-10", 100.0, approve=False)
    entered = invoice(cl, c, "V-0101", "E-1", "2026-09-10", 100.0, validate=False, approve=False)
    for inv in (matched, entered):
        assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/invoices", "ap_supervisor", "not_approved",
                                     [("payment_run", rid), ("ap_invoice", inv)], body={"invoice": inv})
    # Vendor made inactive after approval.
    inactive = invoice(cl, c, "V-0101", "I-1", "2026-09-10", 100.0)
    ok(cl.patch("/vendors/V-0101", json={"status": "inactive"}, headers=c.headers("purchasing_manager")), 200)
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/invoices", "ap_supervisor", "vendor_inactive",
                                 [("payment_run", rid)], body={"invoice": inactive})
    ok(cl.patch("/vendors/V-0101", json={"status": "active"}, headers=c.headers("purchasing_manager")), 200)
    # No verified remit account.
    no_acct = invoice(cl, c, "V-0104", "N-1", "2026-09-10", 100.0)
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/invoices", "ap_supervisor",
                                 "no_verified_account", [("payment_run", rid)], body={"invoice": no_acct})
    # One live proposal per invoice, across runs.
    good = invoice(cl, c, "V-0101", "G-1", "2026-09-10", 100.0)
    ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": good}, headers=sup))
    rid2 = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-09"}, headers=sup))["id"]
    for run in (rid, rid2):
        assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{run}/invoices", "ap_supervisor",
                                     "already_proposed", [("payment_run", rid), ("payment_run", rid2)],
                                     body={"invoice": good})
    # More than is open; a discount that has expired; a closed run.
    other = invoice(cl, c, "V-0102", "O-1", "2026-09-01", 100.0)
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/invoices", "ap_supervisor", "exceeds_open",
                                 [("payment_run", rid)], body={"invoice": other, "amount": 100.01,
                                                               "take_discount": False})
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/invoices", "ap_supervisor",
                                 "discount_not_available", [("payment_run", rid)],
                                 body={"invoice": other, "take_discount": True})
    # The AP clerk may not build runs at all.
    r = cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": other}, headers=c.headers("ap_clerk"))
    refused(r, "forbidden", 403)
    # Malformed input is a 422, never a 500.
    assert cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": other, "amount": "1.001"}, headers=sup).status_code == 422
    assert cl.post("/payment-runs", json={"pay_date": "2026-10-99"}, headers=sup).status_code == 422
    ties(c)


def test_partial_payment_then_second_proposal(company):
    c = company
    cl = client(c)
    sup, ctl = c.headers("ap_supervisor"), c.headers("controller")
    inv = invoice(cl, c, "V-0101", "P-1", "2026-09-01", 1000.0)
    rid = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08"}, headers=sup))["id"]
    ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": inv, "amount": 400}, headers=sup))
    ok(cl.post(f"/payment-runs/{rid}/submit", headers=sup))
    ok(cl.post(f"/payment-runs/{rid}/approve", headers=ctl))
    ok(cl.post(f"/payment-runs/{rid}/release", headers=ctl))
    got = ok(cl.get(f"/ap-invoices/{inv}", headers=sup), 200)
    assert got["status"] == "approved" and got["open"] == 600.0
    rid2 = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08"}, headers=sup))["id"]
    d = ok(cl.post(f"/payment-runs/{rid2}/invoices", json={"invoice": inv}, headers=sup))
    assert d["total"] == 600.0
    # Removing it from the draft voids the empty payment; the invoice can be proposed again.
    d = ok(cl.delete(f"/payment-runs/{rid2}/invoices/{inv}", headers=sup), 200)
    assert d["total"] == 0 and [p["status"] for p in d["payments"]] == ["voided"]
    ok(cl.post(f"/payment-runs/{rid2}/invoices", json={"invoice": inv}, headers=sup))
    ties(c)


def test_approval_controls_and_release_rechecks_with_return(company):
    c = company
    cl = client(c)
    sup, ctl = c.headers("ap_supervisor"), c.headers("controller")
    inv = invoice(cl, c, "V-0101", "R-1", "2026-09-01", 2500.0)
    rid = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08"}, headers=sup))["id"]
    refused(cl.post(f"/payment-runs/{rid}/submit", headers=sup), "empty_run")
    ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": inv}, headers=sup))
    refused(cl.post(f"/payment-runs/{rid}/release", headers=ctl), "bad_status")
    ok(cl.post(f"/payment-runs/{rid}/submit", headers=sup))
    assert_refused_and_unchanged(c, cl, "DELETE", f"/payment-runs/{rid}/invoices/{inv}", "ap_supervisor",
                                 "bad_status", [("payment_run", rid)])
    # Over the approver's limit.
    c.builder.run("sys-setup", lambda tx: tx.conn.exec_driver_sql(
        "UPDATE approval_limits SET limit_cents = 100000 WHERE user_id = 'controller2' AND doc_type = 'payment_run'"))
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/approve", "controller2", "over_limit",
                                 [("payment_run", rid)])
    ok(cl.post(f"/payment-runs/{rid}/approve", headers=ctl))

    # A bank change verified after approval: release refuses, nothing moves, the run returns.
    new = ok(cl.post("/vendors/V-0101/bank-accounts", json={"bank_name": "New Bank", "account_number": "55554444",
                                                            "routing_number": "011000015"}, headers=sup))
    ok(cl.post(f"/vendor-bank-accounts/{new['id']}/verify", headers=c.headers("ap_supervisor2")))
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/release", "controller", "account_changed",
                                 [("payment_run", rid), ("ap_invoice", inv)])
    ok(cl.post(f"/payment-runs/{rid}/return", json={"note": "re-propose to the new account"}, headers=ctl))
    ok(cl.delete(f"/payment-runs/{rid}/invoices/{inv}", headers=sup), 200)
    d = ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": inv}, headers=sup))
    live = [p for p in d["payments"] if p["status"] == "proposed"]
    assert live[0]["paid_to"] == new["id"]
    ok(cl.post(f"/payment-runs/{rid}/submit", headers=sup))
    ok(cl.post(f"/payment-runs/{rid}/approve", headers=ctl))

    # A hold placed after approval: release refuses; the approved run can still be returned.
    hold = ok(cl.post(f"/ap-invoices/{inv}/holds", json={"reason": "vendor"}, headers=sup))["holds"][0]["id"]
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/release", "controller", "on_hold",
                                 [("payment_run", rid), ("ap_invoice", inv)])
    ok(cl.post(f"/holds/{hold}/release", headers=sup))
    ok(cl.post(f"/payment-runs/{rid}/release", headers=ctl))
    assert ok(cl.get(f"/ap-invoices/{inv}", headers=sup), 200)["status"] == "paid"
    # Released runs are final: no return, no cancel, no void of the paid invoice.
    refused(cl.post(f"/payment-runs/{rid}/return", headers=ctl), "bad_status")
    refused(cl.post(f"/ap-invoices/{inv}/void", headers=sup), "has_payments")
    ties(c)


def test_preparer_cannot_approve_own_run_and_cancel(company):
    c = company
    cl = client(c)
    adm = c.headers("admin")
    inv = invoice(cl, c, "V-0101", "A-1", "2026-09-01", 50.0)
    rid = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08"}, headers=adm))["id"]
    ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": inv}, headers=adm))
    ok(cl.post(f"/payment-runs/{rid}/submit", headers=adm))
    assert_refused_and_unchanged(c, cl, "POST", f"/payment-runs/{rid}/approve", "admin", "preparer_cannot_approve",
                                 [("payment_run", rid)])
    ok(cl.post(f"/payment-runs/{rid}/return", headers=c.headers("controller")))
    d = ok(cl.post(f"/payment-runs/{rid}/cancel", headers=adm))
    assert d["status"] == "cancelled" and {p["status"] for p in d["payments"]} == {"voided"}
    rid2 = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08"}, headers=adm))["id"]
    ok(cl.post(f"/payment-runs/{rid2}/invoices", json={"invoice": inv}, headers=adm))


def test_approver_actor_refusal_leaves_run_submitted(company):
    c = company
    world = {"payment_run_approver": {"user": "controller2", "approve_after_days": 1, "release": True}}
    cl = client(c, world)
    sup = c.headers("ap_supervisor")
    inv = invoice(cl, c, "V-0101", "Z-1", "2026-09-01", 80.0)
    rid = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08"}, headers=sup))["id"]
    ok(cl.post(f"/payment-runs/{rid}/invoices", json={"invoice": inv}, headers=sup))
    ok(cl.post(f"/payment-runs/{rid}/submit", headers=sup))
    ok(cl.post(f"/ap-invoices/{inv}/holds", json={"reason": "other"}, headers=sup))
    days = advance(c.builder.db, World(world), "2026-10-09")
    assert days[-1]["refusals"] == 1
    assert ok(cl.get(f"/payment-runs/{rid}", headers=sup), 200)["status"] == "submitted"
    ties(c)
