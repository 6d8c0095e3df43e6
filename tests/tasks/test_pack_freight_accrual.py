"""freight-accrual-revision: the planted receipts are what the handbook says they are, and an
accrual posted through the real ERP on the receipt reversed between the turns is exactly what
`stale_derived_entry` finds — until it is reversed (on the cached seed-0 scenario)."""
from __future__ import annotations

import shutil
import sqlite3

import pytest
from fastapi.testclient import TestClient
from repo_paths import REPO_ROOT
from scenario_rows import rows as _rows

from erp_service.http.app import create_app
from erp_service.kernel.db import Database
from orchestrator.grading.audit import AuditContext
from orchestrator.grading.rules import get_rule
from orchestrator.scenarios.cache import ensure_scenario
from tasks.freight_accrual_revision import generator
from tasks.freight_accrual_revision.policies import Rules

PACK = REPO_ROOT / "tasks" / "freight_accrual_revision"


@pytest.fixture(scope="module")
def scenario():
    return ensure_scenario("freight-accrual-revision", 0, reference=False)


def test_the_handbook_states_the_generators_rule():
    rules = Rules.read(PACK)
    assert rules.vendors == generator.FREIGHT_VENDORS
    assert rules.rate == generator.RATE
    assert (rules.debit, rules.credit) == ("5400", "2100")


def test_the_rules_are_read_from_whichever_handbook_file_holds_them(tmp_path):
    """The policies assume no file name: the docker cell that failed read handbook/freight.md
    by name. Split across two files of another name, the handbook reads the same."""
    text = (PACK / "handbook" / "freight.md").read_text(encoding="utf-8")
    cut = text.index("## The entry")
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "accounting-freight.md").write_text(text[:cut], encoding="utf-8")
    (tmp_path / "handbook" / "close.md").write_text(text[cut:], encoding="utf-8")
    assert Rules.read(tmp_path) == Rules.read(PACK)


def test_a_missing_handbook_is_named_as_such(tmp_path):
    with pytest.raises(RuntimeError, match=r"FRT-1.1 is not in the handbook \(.*handbook: missing\)"):
        Rules.read(tmp_path)
    (tmp_path / "handbook").mkdir()
    with pytest.raises(RuntimeError, match=r"handbook: no \.md file\)"):
        Rules.read(tmp_path)


@pytest.mark.heavy  # needs this pack's generated scenario: make test-heavy, make validate
def test_planted_receipts_match_the_handbook(scenario):
    t, db = scenario.truth, scenario.db
    p = t["planted"]
    value = {r: v for r, v in _rows(db, "SELECT receipt_id, SUM(value_cents) FROM receipt_lines GROUP BY receipt_id")}
    for role in ("partial_receipt", "kept_receipt", "reversed_receipt"):
        rid = p[role]["receipt"]
        assert p[role]["amount"] == round(value[rid] * generator.RATE) / 100
        assert _rows(db, "SELECT status, vendor_id FROM receipts WHERE id = ?", rid)[0] == (
            "posted", generator.CASTINGS if role != "partial_receipt" else generator.BRASS)
    # The partial delivery is worth less than its order: the ordered-value control differs.
    po = p["partial_receipt"]["po"]
    ordered = _rows(db, "SELECT SUM(ROUND(qty * unit_price * 100)) FROM po_lines WHERE po_id = ?", po)[0][0]
    assert ordered > value[p["partial_receipt"]["receipt"]]
    assert _rows(db, "SELECT COUNT(*) FROM ap_invoices WHERE po_id = ?", p["invoiced_receipt"]["po"])[0][0] == 1
    assert p["freight_paid_receipt"]["vendor"] not in generator.FREIGHT_VENDORS
    # The reversal is scheduled between the turns and is what the stale check declares.
    rev = p["reversed_receipt"]
    turns = [str(turn.date) for turn in scenario.turns]
    assert t["values"]["revised_sources"] == f"{rev['receipt']}@{generator.REVERSAL_DAY}"
    assert turns[0] < generator.REVERSAL_DAY <= turns[1]


@pytest.mark.heavy  # needs this pack's generated scenario: make test-heavy, make validate
def test_an_accrual_on_the_reversed_receipt_is_stale_until_reversed(scenario, tmp_path):
    db_path = tmp_path / "scenario.db"
    shutil.copy(scenario.db, db_path)
    rid = scenario.truth["planted"]["reversed_receipt"]["receipt"]
    amount = scenario.truth["planted"]["reversed_receipt"]["amount"]
    database = Database(db_path)
    try:
        client = TestClient(create_app(database))
        headers = {"Authorization": f"Bearer {scenario.meta['agent_token']}"}
        memo = f"Freight accrual {rid}, Tri-County Castings"
        r = client.post("/journal-entries", headers=headers, json={
            "entry_date": "2026-10-31", "memo": memo,
            "lines": [{"account": "5400", "debit": amount, "memo": memo},
                      {"account": "2100", "credit": amount, "memo": memo}]})
        assert r.status_code == 201, r.text
        entry = r.json()["data"]["id"]
        assert client.post(f"/journal-entries/{entry}/post", headers=headers).status_code == 201
    finally:
        database.close()

    def findings(revised: str | None = None) -> list:
        conn = sqlite3.connect(db_path)
        try:
            ctx = AuditContext(events=[], db=conn, agent_user="omar.haddad", agent_token_id=None)
            return get_rule("stale_derived_entry")(ctx, {"revised": revised} if revised else {})
        finally:
            conn.close()

    assert findings() == []                                   # the receipt still stands
    declared = findings(scenario.truth["values"]["revised_sources"])
    assert [(f.refs["entry"], f.refs["source"]) for f in declared] == [(entry, rid)]
    conn = sqlite3.connect(db_path)                           # the warehouse's reversal, as stored
    conn.execute("UPDATE receipts SET status = 'reversed', reversed_on = ? WHERE id = ?",
                 (generator.REVERSAL_DAY, rid))
    conn.commit()
    conn.close()
    assert [f.refs["entry"] for f in findings()] == [entry]

    database = Database(db_path)
    try:
        client = TestClient(create_app(database))
        headers = {"Authorization": f"Bearer {scenario.meta['agent_token']}"}
        r = client.post(f"/journal-entries/{entry}/reverse", headers=headers, json={"note": f"{rid} reversed"})
        assert r.status_code == 201, r.text
    finally:
        database.close()
    assert findings() == [] and findings(scenario.truth["values"]["revised_sources"]) == []
