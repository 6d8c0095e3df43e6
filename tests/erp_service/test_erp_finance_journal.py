"""Manual journal entries (lifecycle, preparer/approver, threshold, attachments, edits only in
draft/returned, reversal by mirror), the refusal to reverse entries with subledger postings or
post to control accounts, periods close/reopen, and the ledger read routes."""
from __future__ import annotations

import base64

import pytest
from erp_finance_support import assert_refused_and_unchanged, client, finance_company, invoice, ok, refused, ties


@pytest.fixture()
def company(tmp_path):
    return finance_company(tmp_path)


def entry(amount: float, debit: str = "6100", credit: str = "1000", day: str = "2026-10-08") -> dict:
    return {"entry_date": day, "memo": "October rent",
            "lines": [{"account": debit, "debit": amount}, {"account": credit, "credit": amount}]}


def test_lifecycle_threshold_and_attachments(company):
    c = company
    cl = client(c)
    acc, ctl = c.headers("staff_accountant"), c.headers("controller")
    je = ok(cl.post("/journal-entries", json=entry(6000), headers=acc))
    jid = je["id"]
    assert je["status"] == "draft" and je["total"] == 6000.0 and je["period"] == "2026-10"
    # At or above the $5,000 threshold it needs approval before posting.
    assert_refused_and_unchanged(c, cl, "POST", f"/journal-entries/{jid}/post", "staff_accountant",
                                 "approval_required", [("journal_entry", jid)])
    edited = ok(cl.put(f"/journal-entries/{jid}/lines", json={"lines": [
        {"account": "6100", "debit": 5500}, {"account": "6150", "debit": 500}, {"account": "1000", "credit": 6000}]},
        headers=acc), 200)
    assert len(edited["lines"]) == 3
    pdf = base64.b64encode(b"%PDF-1.4 lease invoice").decode()
    att = ok(cl.post(f"/journal-entries/{jid}/attachments", json={"filename": "lease.pdf", "content_base64": pdf},
                     headers=acc))["attachments"][0]
    got = ok(cl.get(f"/attachments/{att['id']}", headers=ctl), 200)
    assert base64.b64decode(got["content_base64"]) == b"%PDF-1.4 lease invoice" and got["doc_id"] == jid
    assert cl.post(f"/journal-entries/{jid}/attachments", json={"filename": "x", "content_base64": "@@@"},
                   headers=acc).status_code == 422
    ok(cl.post(f"/journal-entries/{jid}/submit", headers=acc))
    assert_refused_and_unchanged(c, cl, "PUT", f"/journal-entries/{jid}/lines", "staff_accountant", "not_editable",
                                 [("journal_entry", jid)], body={"lines": entry(1)["lines"]})
    ok(cl.post(f"/journal-entries/{jid}/return", json={"note": "split utilities"}, headers=ctl))
    ok(cl.put(f"/journal-entries/{jid}/lines", json={"lines": entry(6000)["lines"]}, headers=acc), 200)
    ok(cl.post(f"/journal-entries/{jid}/submit", headers=acc))
    ok(cl.post(f"/journal-entries/{jid}/approve", headers=ctl))
    posted = ok(cl.post(f"/journal-entries/{jid}/post", headers=acc))
    assert posted["status"] == "posted" and posted["approved_by"] == "controller"
    assert [h["to_status"] for h in posted["history"]] == ["draft", "submitted", "returned", "submitted", "approved",
                                                            "posted"]
    tb = ok(cl.get("/reports/trial-balance", headers=ctl), 200)
    assert {r["account"]: r["debit"] for r in tb["rows"]}["6100"] == 6000.0
    # Small entries can be posted directly.
    small = ok(cl.post("/journal-entries", json=entry(120, "6300"), headers=acc))
    assert ok(cl.post(f"/journal-entries/{small['id']}/post", headers=acc))["status"] == "posted"
    ties(c)


def test_preparer_cannot_approve_and_limits(company):
    c = company
    cl = client(c)
    ctl = c.headers("controller")
    jid = ok(cl.post("/journal-entries", json=entry(7000), headers=ctl))["id"]
    ok(cl.post(f"/journal-entries/{jid}/submit", headers=ctl))
    assert_refused_and_unchanged(c, cl, "POST", f"/journal-entries/{jid}/approve", "controller",
                                 "preparer_cannot_approve", [("journal_entry", jid)])
    big = ok(cl.post("/journal-entries", json=entry(60000), headers=ctl))["id"]
    ok(cl.post(f"/journal-entries/{big}/submit", headers=ctl))
    assert_refused_and_unchanged(c, cl, "POST", f"/journal-entries/{big}/approve", "controller2", "over_limit",
                                 [("journal_entry", big)])
    refused(cl.post(f"/journal-entries/{jid}/approve", headers=c.headers("staff_accountant")), "forbidden", 403)
    ok(cl.post(f"/journal-entries/{jid}/approve", headers=c.headers("controller2")))


def test_bad_entries_are_refused(company):
    c = company
    cl = client(c)
    acc = c.headers("staff_accountant")
    unbalanced = {"entry_date": "2026-10-08", "memo": "x",
                  "lines": [{"account": "6100", "debit": 10}, {"account": "1000", "credit": 9}]}
    refused(cl.post("/journal-entries", json=unbalanced, headers=acc), "unbalanced", 422)
    one_line = {"entry_date": "2026-10-08", "memo": "x", "lines": [{"account": "6100", "debit": 10}]}
    assert cl.post("/journal-entries", json=one_line, headers=acc).status_code == 422
    both = {"entry_date": "2026-10-08", "memo": "x",
            "lines": [{"account": "6100", "debit": 10, "credit": 10}, {"account": "1000", "credit": 0}]}
    assert cl.post("/journal-entries", json=both, headers=acc).status_code == 422
    assert cl.post("/journal-entries", json=entry(10, day="2026-10-99"), headers=acc).status_code == 422
    assert cl.post("/journal-entries", json=entry(10, debit="9999"), headers=acc).status_code == 422
    refused(cl.post("/journal-entries", json=entry(10, day="2030-01-01"), headers=acc), "period_missing")
    # Control accounts are kept by their subledgers.
    refused(cl.post("/journal-entries", json=entry(10, debit="2000"), headers=acc), "control_account")
    ties(c)


def test_reversal_mirror_and_subledger_refusal(company):
    c = company
    cl = client(c)
    acc = c.headers("staff_accountant")
    jid = ok(cl.post("/journal-entries", json=entry(250, "6650"), headers=acc))["id"]
    ok(cl.post(f"/journal-entries/{jid}/post", headers=acc))
    rev = ok(cl.post(f"/journal-entries/{jid}/reverse", json={"note": "posted twice"}, headers=acc))
    assert rev["status"] == "reversed" and rev["reversed_by"]
    mirror = ok(cl.get(f"/journal-entries/{rev['reversed_by']}", headers=acc), 200)
    assert mirror["reverses"] == jid and {(l["account"], l["debit"], l["credit"]) for l in mirror["lines"]} == \
        {("6650", 0.0, 250.0), ("1000", 250.0, 0.0)}
    refused(cl.post(f"/journal-entries/{jid}/reverse", headers=acc), "bad_status")
    draft = ok(cl.post("/journal-entries", json=entry(5), headers=acc))["id"]
    refused(cl.post(f"/journal-entries/{draft}/reverse", headers=acc), "bad_status")
    # A system entry (the AP invoice's posting) cannot be reversed: the AP tie would break.
    inv = invoice(cl, c, "V-0101", "JR-1", "2026-10-01", 480.0)
    system_je = ok(cl.get(f"/ap-invoices/{inv}", headers=acc), 200)["links"]["journal_entry"][0]
    assert_refused_and_unchanged(c, cl, "POST", f"/journal-entries/{system_je}/reverse", "staff_accountant",
                                 "subledger_entry", [("journal_entry", system_je), ("ap_invoice", inv)])
    refused(cl.put(f"/journal-entries/{system_je}/lines", json={"lines": entry(1)["lines"]}, headers=acc),
            "not_editable")
    t = ties(c)
    assert t["ap"]["gl"] == -480.0
    listed = ok(cl.get("/journal-entries", params={"source": "ap"}, headers=acc), 200)["items"]
    assert [e["id"] for e in listed] == [system_je]
    by_acct = ok(cl.get("/journal-entries", params={"account": "6650"}, headers=acc), 200)["items"]
    assert {e["id"] for e in by_acct} == {jid, rev["reversed_by"]}


def test_period_close_and_reopen(company):
    c = company
    cl = client(c)
    ctl, acc = c.headers("controller"), c.headers("staff_accountant")
    jid = ok(cl.post("/journal-entries", json=entry(40, day="2026-09-30"), headers=acc))["id"]
    ok(cl.post("/periods/2026-09/close", headers=ctl))
    assert_refused_and_unchanged(c, cl, "POST", f"/journal-entries/{jid}/post", "staff_accountant", "period_closed",
                                 [("journal_entry", jid), ("period", "2026-09")])
    refused(cl.post("/periods/2026-09/close", headers=ctl), "bad_status")
    refused(cl.post("/periods/2026-09/reopen", headers=acc), "forbidden", 403)
    ok(cl.post("/periods/2026-09/reopen", headers=ctl))
    ok(cl.post(f"/journal-entries/{jid}/post", headers=acc))
    periods = ok(cl.get("/periods", params={"status": "closed"}, headers=acc), 200)
    assert periods["total"] == 0
    # Closing today's period stops AP validation too.
    inv = invoice(cl, c, "V-0101", "PC-1", "2026-10-01", 10.0, validate=False, approve=False)
    ok(cl.post("/periods/2026-10/close", headers=ctl))
    assert_refused_and_unchanged(c, cl, "POST", f"/ap-invoices/{inv}/validate", "ap_clerk", "period_closed",
                                 [("ap_invoice", inv)])
    ok(cl.post("/periods/2026-10/reopen", headers=ctl))


def test_reference_routes(company):
    c = company
    cl = client(c)
    h = c.headers("analyst")
    accts = ok(cl.get("/accounts", params={"limit": 1000}, headers=h), 200)
    assert {a["id"]: a["control"] for a in accts["items"]}["2000"] == "ap"
    assert ok(cl.get("/terms", headers=h), 200)["total"] == 6
    assert ok(cl.get("/budgets", headers=h), 200)["total"] == 0
    bva = ok(cl.get("/reports/budget-vs-actual", params={"period": "2026-10"}, headers=h), 200)
    assert bva["rows"] == []
    ties_rep = ok(cl.get("/reports/control-ties", headers=h), 200)
    assert any(r["control"] == "ap" and r["tied"] for r in ties_rep["rows"])


def test_a_manual_entry_already_on_a_control_account_can_be_reversed(company):
    """Manual lines on a control account are refused, but one planted by history (a migration)
    moved AP without a document: its reversal restores the tie, so the ERP allows it."""
    from erp_service.domains import ledger

    c = company
    cl = client(c)
    acc = c.headers("staff_accountant")
    invoice(cl, c, "V-0101", "JR-9", "2026-10-01", 480.0)
    refused(cl.post("/journal-entries", json=entry(125, "2000", "6100"), headers=acc), "control_account")
    plug = c.builder.run("sys-setup", lambda tx: ledger.post(
        tx, source="manual", source_ref=None, memo="AP true-up", entry_date="2026-10-02",
        lines=[ledger.Line("2000", 125_00), ledger.Line("6100", -125_00)]))
    with c.builder.db.transaction() as conn:
        broken = {r["control"]: r for r in ledger.control_ties(conn)}["ap"]
    assert not broken["tied"]
    rev = ok(cl.post(f"/journal-entries/{plug}/reverse", json={"note": "plug: no document behind it"}, headers=acc))
    assert rev["status"] == "reversed"
    assert ties(c)["ap"]["gl"] == -480.0
