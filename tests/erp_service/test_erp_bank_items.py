"""The bank's own statement items (fees, interest, a returned payment) from the world file, and
the company's two named actions that book them: `POST /bank-statement-lines/{id}/book` and
`POST /payments/{id}/record-return` — on the real ERP, through the agent API and sim.advance."""
from __future__ import annotations

import pytest
from erp_finance_support import OPENING_CASH, client, finance_company, invoice, ok, refused, ties
from pydantic import ValidationError

from erp_service.sim import World, advance
from erp_service.world import World as WorldFile

FEE = {"on": "2026-10-10", "kind": "fee", "ref": "SC-1010", "description": "Monthly service charge", "amount": 35.0}
INTEREST = {"on": "2026-10-12", "kind": "interest", "ref": "INT-1012", "description": "Interest earned",
            "amount": 12.4}


@pytest.fixture()
def paid(tmp_path):
    """Two invoices paid in one run, released on Friday 2026-10-09 and cleared on Monday the 12th."""
    c = finance_company(tmp_path)
    world = {"payment_run_approver": {"user": "controller", "approve_after_days": 1, "release": True}}
    cl = client(c, world)
    sup = c.headers("ap_supervisor")
    c.invoices = [invoice(cl, c, "V-0101", "BW-1001", "2026-08-20", 1200.00),  # type: ignore[attr-defined]
                  invoice(cl, c, "V-0102", "OP-77", "2026-10-01", 5000.00)]   # 2/10: 100.00 discount
    run = ok(cl.post("/payment-runs", json={"pay_date": "2026-10-08", "bank_account": "OPER"}, headers=sup))["id"]
    for inv in c.invoices:  # type: ignore[attr-defined]
        ok(cl.post(f"/payment-runs/{run}/invoices", json={"invoice": inv}, headers=sup))
    ok(cl.post(f"/payment-runs/{run}/submit", headers=sup))
    c.world = world  # type: ignore[attr-defined]
    c.cl = cl  # type: ignore[attr-defined]
    c.pays = {p["vendor"]: p["id"] for p in ok(cl.get("/payments", params={"run": run}, headers=sup), 200)["items"]}  # type: ignore[attr-defined]
    return c


def _advance(c, to, items):
    return advance(c.builder.db, World({**c.world, "bank_items": items}), to)


def _lines(c, kind=None):
    params = {"kind": kind} if kind else {}
    return ok(c.cl.get("/bank-statement-lines", params=params, headers=c.headers("staff_accountant")), 200)["items"]


def _oper(c):
    return next(a for a in ok(c.cl.get("/bank-accounts", headers=c.headers("staff_accountant")), 200)["items"]
                if a["id"] == "OPER")


def test_the_bank_posts_its_items_on_their_day_once_and_returns_only_a_cleared_payment(paid):
    c = paid
    ret = {"on": "2026-10-09", "kind": "return", "ref": "RTN-88", "description": "R02 account closed",
           "payment_id": c.pays["V-0102"]}
    _advance(c, "2026-10-09", [FEE, INTEREST, ret])
    assert [l["kind"] for l in _lines(c)] == ["opening"]            # nothing due; the payment has not cleared
    _advance(c, "2026-10-12", [FEE, INTEREST, ret])                  # Saturday's fee posts on Monday
    mine = [(l["kind"], l["ref"], l["amount"], l["date"]) for l in _lines(c) if l["kind"] in ("fee", "interest")]
    assert mine == [("fee", "SC-1010", -35.0, "2026-10-12"), ("interest", "INT-1012", 12.4, "2026-10-12")]
    assert _lines(c, "return") == []                                 # cleared today: returned on the next workday
    _advance(c, "2026-10-14", [FEE, INTEREST, ret])
    returns = _lines(c, "return")
    assert [(l["ref"], l["amount"], l["date"], l["payment_id"]) for l in returns] == [
        ("RTN-88", 4900.0, "2026-10-13", c.pays["V-0102"])]
    assert len(_lines(c)) == 6                                       # opening, 2 payments, fee, interest, return
    oper = _oper(c)
    # The books have not moved: the statement is ahead by the bank's own items.
    assert round(oper["statement_balance"] - oper["balance"], 2) == round(-35.0 + 12.4 + 4900.0, 2)
    ties(c)


def test_booking_fee_and_interest_meets_the_statement_without_a_second_line(paid):
    c = paid
    _advance(c, "2026-10-12", [FEE, INTEREST])
    acc = c.headers("staff_accountant")
    fee, interest = (next(l for l in _lines(c) if l["kind"] == k) for k in ("fee", "interest"))
    refused(c.cl.post(f"/bank-statement-lines/{fee['id']}/book", json={"account": "2000"}, headers=acc),
            "control_account")
    assert c.cl.post(f"/bank-statement-lines/{fee['id']}/book", json={"account": "1000"},
                     headers=acc).status_code == 422                # its own cash account
    assert c.cl.post(f"/bank-statement-lines/{fee['id']}/book", json={"account": "6650"},
                     headers=c.headers("ap_clerk")).status_code == 403
    booked = ok(c.cl.post(f"/bank-statement-lines/{fee['id']}/book", json={"account": "6650"}, headers=acc))
    assert booked["journal_entry"]
    refused(c.cl.post(f"/bank-statement-lines/{fee['id']}/book", json={"account": "6650"}, headers=acc),
            "already_booked")
    ok(c.cl.post(f"/bank-statement-lines/{interest['id']}/book", json={"account": "4900", "memo": "October interest"},
                 headers=acc))
    opening = _lines(c, "opening")[0]
    refused(c.cl.post(f"/bank-statement-lines/{opening['id']}/book", json={"account": "6650"}, headers=acc),
            "not_bookable")
    assert len(_lines(c)) == 5                                       # no feed line for the bookings
    entry = ok(c.cl.get(f"/journal-entries/{booked['journal_entry']}", headers=acc), 200)
    assert entry["source"] == "bank" and entry["entry_date"] == "2026-10-12"
    oper = _oper(c)
    assert oper["statement_balance"] == oper["balance"] == round(OPENING_CASH / 100 - 6100.0 - 35.0 + 12.4, 2)
    detail = ok(c.cl.get(f"/bank-statement-lines/{fee['id']}", headers=acc), 200)
    assert detail["journal_entry"] == booked["journal_entry"]
    ties(c)


def test_recording_a_returned_payment_reopens_its_invoice_and_ties(paid):
    c = paid
    pid, other = c.pays["V-0102"], c.pays["V-0101"]
    ret = {"on": "2026-10-13", "kind": "return", "ref": "RTN-88", "description": "R02 account closed",
           "payment_id": pid}
    acc, sup = c.headers("staff_accountant"), c.headers("ap_supervisor")
    _advance(c, "2026-10-12", [ret])
    refused(c.cl.post(f"/payments/{pid}/record-return", headers=acc), "no_return_reported")  # not reported yet
    _advance(c, "2026-10-13", [ret])
    refused(c.cl.post(f"/payments/{other}/record-return", headers=acc), "no_return_reported")
    return_line = _lines(c, "return")[0]
    refused(c.cl.post(f"/bank-statement-lines/{return_line['id']}/book", json={"account": "6650"}, headers=acc),
            "not_bookable")
    assert c.cl.post(f"/payments/{pid}/record-return", headers=sup).status_code == 403
    out = ok(c.cl.post(f"/payments/{pid}/record-return", headers=acc))
    assert out["status"] == "returned"
    inv = ok(c.cl.get(f"/ap-invoices/{c.invoices[1]}", headers=sup), 200)
    assert inv["status"] == "approved" and inv["open"] == 5000.0
    assert ok(c.cl.get(f"/ap-invoices/{c.invoices[0]}", headers=sup), 200)["status"] == "paid"
    refused(c.cl.post(f"/payments/{pid}/record-return", headers=acc), "already_returned")
    oper = _oper(c)
    assert oper["statement_balance"] == oper["balance"] == OPENING_CASH / 100 - 1200.0
    all_ties = ties(c)
    assert all_ties["ap"]["gl"] == -5000.0                           # the payable is back
    assert len(_lines(c)) == 4                                       # opening, 2 payments, the return


def test_the_world_file_refuses_malformed_bank_items():
    WorldFile(bank_items=[FEE, INTEREST, {"on": "2026-10-13", "kind": "return", "ref": "R", "description": "x",
                                          "payment_id": "PAY-1"}])
    for bad in ({**FEE, "amount": None}, {**FEE, "payment_id": "PAY-1"}, {**FEE, "kind": "charge"},
                {"on": "2026-10-13", "kind": "return", "ref": "R", "description": "x", "amount": 5.0,
                 "payment_id": "PAY-1"},
                {**FEE, "amount": -3.0}, {**FEE, "on": "Oct 10"}, {**FEE, "memo": "typo field"}):
        with pytest.raises(ValidationError):
            WorldFile(bank_items=[bad])
