"""Shared set-up for the finance-domain tests (no tests here): a company with vendors, verified
bank accounts, an operating bank account with opening cash, approval limits, and helpers that
drive invoices through the API."""
from __future__ import annotations

import json
from typing import Any

from erp_company import build_company
from fastapi.testclient import TestClient
from sqlalchemy import select

from erp_service.domains import ledger
from erp_service.domains.banking import bank_accounts
from erp_service.domains.org import approval_limits
from erp_service.domains.vendors import vendor_bank_accounts, vendors
from erp_service.http.app import create_app
from erp_service.kernel.schema import audit_events
from erp_service.kernel.tx import snapshot
from erp_service.sim import World

OPENING_CASH = 85_000_00


def finance_company(tmp_path):
    """The test company plus finance master data (see module docstring)."""
    c = build_company(tmp_path)
    b = c.builder
    for uid, role in (("ap_supervisor2", "ap_supervisor"), ("controller2", "controller")):
        b.add_user(uid, uid, roles=[role])
        b.add_token(uid, f"tok-secret-{uid}", f"tok-{uid}")
        c.tokens[uid] = f"tok-secret-{uid}"
    for uid in ("controller", "controller2", "admin"):
        b.insert_many(approval_limits, [{"user_id": uid, "doc_type": "payment_run", "limit_cents": 100_000_00},
                                        {"user_id": uid, "doc_type": "journal_entry", "limit_cents": 50_000_00}])
    b.insert(bank_accounts, id="OPER", name="Operating account", bank_name="First Test Bank",
             account_number="000123456789", gl_account_id="1000", status="active")

    def opening(tx):
        return ledger.post(tx, source="opening", source_ref="opening", memo="Opening cash", entry_date="2026-10-01",
                           lines=[ledger.Line("1000", OPENING_CASH), ledger.Line("3000", -OPENING_CASH)])
    b.run("sys-setup", opening)
    rows = [("V-0101", "Brassworks Ltd", "active", "NET30"), ("V-0102", "Ohio Packaging", "active", "2/10N30"),
            ("V-0103", "Dormant Castings", "inactive", "NET30"), ("V-0104", "New Seals Inc", "active", "NET30")]
    for vid, name, status, terms in rows:
        acct = None if vid == "V-0104" else f"VBA-{vid[2:]}"
        b.insert(vendors, id=vid, name=name, status=status, terms=terms, tin=f"12-{vid[2:]}000",
                 email=f"ar@{vid.lower()}.example", phone=f"+1 555 010 {vid[2:]}", quality_hold=0,
                 remit_account=acct)
        if acct:
            b.insert(vendor_bank_accounts, id=acct, status="verified", created_by="sys-setup", created_on="2026-01-05",
                     vendor_id=vid, bank_name="Old Bank", account_name=name, account_number=f"99887766{vid[2:]}",
                     routing_number="021000021")
    return c


def client(c, world: dict | None = None) -> TestClient:
    """A TestClient on the company's database."""
    return TestClient(create_app(c.builder.db, World(world or {})))


def ok(resp, status: int = 201) -> Any:
    """The data of a successful response (asserting its status)."""
    assert resp.status_code == status, resp.text
    return resp.json()["data"]


def refused(resp, code: str, status: int = 409) -> dict:
    """Assert a refusal with `code`."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["code"] == code, body
    return body


def last_audit(c) -> dict:
    with c.builder.db.transaction() as conn:
        return dict(conn.execute(select(audit_events).order_by(audit_events.c.id.desc())).mappings().first())


def assert_refused_and_unchanged(c, cl, method: str, path: str, user: str, code: str, images: list[tuple[str, str]],
                                 body: Any = None) -> None:
    """A request refused with `code`, audited as refused, leaving the named objects unchanged."""
    with c.builder.db.transaction() as conn:
        before = [snapshot(conn, t, i) for t, i in images]
    kwargs = {"json": body} if body is not None else {}
    resp = cl.request(method, path, headers=c.headers(user), **kwargs)
    refused(resp, code)
    audit = last_audit(c)
    assert (audit["outcome"], audit["error_code"], audit["path"]) == ("refused", code, path)
    with c.builder.db.transaction() as conn:
        after = [snapshot(conn, t, i) for t, i in images]
    assert json.dumps(before, sort_keys=True, default=str) == json.dumps(after, sort_keys=True, default=str)


def invoice(cl, c, vendor: str, no: str, date: str, amount: float, *, user: str = "ap_clerk",
            validate: bool = True, approve: bool = True, lines: list | None = None) -> str:
    """Enter (and by default validate and approve) a one-line invoice; returns its id."""
    body = {"vendor": vendor, "invoice_no": no, "invoice_date": date,
            "lines": lines or [{"kind": "other", "description": "services", "amount": amount, "account": "6200"}]}
    inv = ok(cl.post("/ap-invoices", json=body, headers=c.headers(user)))
    if validate:
        ok(cl.post(f"/ap-invoices/{inv['id']}/validate", headers=c.headers(user)))
    if approve:
        ok(cl.post(f"/ap-invoices/{inv['id']}/approve", headers=c.headers("ap_supervisor")))
    return inv["id"]


def ties(c) -> dict:
    """Trial balance and every control account with a registered subledger."""
    with c.builder.db.transaction() as conn:
        tb = ledger.trial_balance(conn)
        rows = ledger.control_ties(conn)
    assert tb["balanced"], tb
    for r in rows:
        if r["subledger"] is not None:
            assert r["tied"], r
    return {r["control"]: r for r in rows}
