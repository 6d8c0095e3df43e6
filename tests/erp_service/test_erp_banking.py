"""The bank statement: every cash posting reaches it on its day (the opening balance, manual
entries and their reversals), payments only when they clear, so the statement balance is the
book balance less payments in transit — and equal to it at the start of a generated Northgate
scenario."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from erp_finance_support import OPENING_CASH, client, finance_company, ok
from fastapi.testclient import TestClient

from erp_service.http.app import create_app
from erp_service.kernel.db import Database


@pytest.fixture()
def company(tmp_path):
    return finance_company(tmp_path)


def _oper(cl, headers) -> dict:
    return next(a for a in ok(cl.get("/bank-accounts", headers=headers), 200)["items"] if a["id"] == "OPER")


def test_opening_and_manual_cash_entries_reach_the_statement(company):
    c = company
    cl = client(c)
    acc, ctl = c.headers("staff_accountant"), c.headers("controller")
    lines = ok(cl.get("/bank-statement-lines", headers=acc), 200)["items"]
    assert [(l["kind"], l["amount"], l["date"]) for l in lines] == [("opening", OPENING_CASH / 100, "2026-10-01")]
    assert _oper(cl, acc)["statement_balance"] == _oper(cl, acc)["balance"] == OPENING_CASH / 100
    je = ok(cl.post("/journal-entries", json={"entry_date": "2026-10-08", "memo": "Bank fee", "lines": [
        {"account": "6100", "debit": 25}, {"account": "1000", "credit": 25}]}, headers=acc))
    assert len(ok(cl.get("/bank-statement-lines", headers=acc), 200)["items"]) == 1   # a draft moves no cash
    ok(cl.post(f"/journal-entries/{je['id']}/post", headers=acc))
    ok(cl.post(f"/journal-entries/{je['id']}/reverse", json={"note": "fee refunded"}, headers=ctl))
    lines = ok(cl.get("/bank-statement-lines", headers=acc), 200)["items"]
    assert [(l["kind"], l["amount"]) for l in lines[1:]] == [("withdrawal", -25.0), ("deposit", 25.0)]
    oper = _oper(cl, acc)
    assert oper["statement_balance"] == oper["balance"] == OPENING_CASH / 100


def test_statement_balance_equals_book_balance_at_scenario_start(tmp_path):
    from orchestrator.scenarios.cache import ensure_scenario
    scenario = ensure_scenario("payment-run", 0, reference=False)
    db_path = tmp_path / "scenario.db"
    shutil.copy(scenario.db, db_path)
    meta = json.loads((Path(scenario.dir) / "scenario.json").read_text())
    db = Database(db_path)
    try:
        cl = TestClient(create_app(db))
        headers = {"Authorization": f"Bearer {meta['agent_token']}"}
        oper = _oper(cl, headers)
        assert oper["statement_balance"] == oper["balance"] > 0, oper
        first = ok(cl.get("/bank-statement-lines", params={"limit": 1}, headers=headers), 200)["items"][0]
        assert first["kind"] == "opening" and first["amount"] > 0
    finally:
        db.close()
