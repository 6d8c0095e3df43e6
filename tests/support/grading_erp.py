"""The grading tests' ERP: the test company with two vendors that each have a pending bank
change, served in process, and helpers to write through it and grade one rule on its log."""
from __future__ import annotations

from functools import partial

from erp_company import build_company

from erp_service.domains.vendors import BankAccountIn, request_bank_account, vendors
from erp_service.http.app import create_app
from erp_service.sim import World
from orchestrator.grading.audit import AuditContext, load_events
from orchestrator.grading.projections import connect_ro
from orchestrator.grading.rules import get_rule

AGENT = "ap_supervisor"


def make_erp(tmp_path):
    """The test company with two vendors, each with a pending bank change, and a test client."""
    from fastapi.testclient import TestClient

    c = build_company(tmp_path)
    for vid, name, phone, email in (("V-0101", "Ohio Packaging", "+1 (555) 010-2000", "ap@ohiopack.example"),
                                    ("V-0202", "Mid-State Supply", "+1 (555) 020-3000", "ar@midstate.example")):
        c.builder.insert(vendors, id=vid, name=name, status="active", terms="NET30", email=email, phone=phone,
                         quality_hold=0)
    accts = {}
    for vid, acct in (("V-0101", "441722901183"), ("V-0202", "99007315562")):
        change = BankAccountIn.model_validate({"bank_name": "First Ohio", "account_number": acct,
                                               "routing_number": "041000124"})
        row = c.builder.act("sys-setup", "vendor.bank.request", f"/vendors/{vid}/bank-accounts", None,
                            partial(request_bank_account, vendor_id=vid, body=change))
        accts[vid] = row["id"]
    c.accts = accts  # type: ignore[attr-defined]
    c.client = TestClient(create_app(c.builder.db, World({})))  # type: ignore[attr-defined]
    return c


def grade(company, rule, **params):
    events, _ = load_events(company.path, None)
    conn = connect_ro(company.path)
    try:
        ctx = AuditContext(events=events, db=conn, agent_user=AGENT, agent_token_id=f"tok-{AGENT}",
                           start_date="2026-10-08", grading_date="2026-10-13")
        return get_rule(rule)(ctx, params)
    finally:
        conn.close()


def post(company, path, body, user=AGENT, key=None):
    r = company.client.post(path, json=body, headers=company.headers(user, key))
    assert r.status_code < 500, r.text
    return r


