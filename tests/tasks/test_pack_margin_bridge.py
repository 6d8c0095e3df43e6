"""margin-bridge: the planted drivers are what the ledger says, the bridge adds up, and the
analyst's read-only token is refused every write (on the cached seed-0 scenario)."""
from __future__ import annotations

import shutil
import sqlite3

import pytest
from fastapi.testclient import TestClient

from erp_service.http.app import create_app
from erp_service.kernel.db import Database
from orchestrator.scenarios.cache import ensure_scenario
from tasks.margin_bridge.bridge import gross_margin


@pytest.fixture(scope="module")
def scenario():
    return ensure_scenario("margin-bridge", 0, reference=False)


def _one(db, sql: str, *args) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(sql, args).fetchone()[0] or 0)
    finally:
        conn.close()


@pytest.mark.heavy  # needs this pack's generated scenario: make test-heavy, make validate
def test_each_driver_is_its_ledger_amount_and_the_bridge_adds_up(scenario):
    t, db = scenario.truth, scenario.db
    p = t["planted"]
    on = ("SELECT SUM(l.debit_cents - l.credit_cents) FROM journal_lines l JOIN journal_entries e "
          "ON e.id = l.entry_id WHERE l.account_id = ? AND e.entry_date LIKE '2026-09%' AND ")
    assert _one(db, on + "e.source_ref = ?", "5110", p["price"]["id"]) == p["price"]["cents"]
    assert _one(db, on + "e.id = ?", "4100", p["rebate"]["entry"]) == p["rebate"]["cents"]
    assert _one(db, on + "e.source_ref = ?", "5300", p["write_off"]["adjustment"]) == p["write_off"]["cents"]
    mix = p["mix"]
    margin = mix["revenue_cents"] - mix["cost_cents"]
    # facts.prior_rate is rounded to six places: the effect agrees within a few cents.
    assert mix["cents"] > 0
    assert mix["cents"] == pytest.approx(mix["revenue_cents"] * t["facts"]["prior_rate"] - margin, abs=5)
    drivers = sum(p[k]["cents"] for k in ("price", "rebate", "mix", "write_off"))
    f = t["facts"]
    assert f["change_cents"] == f["month"]["margin"] - f["prior"]["margin"]
    assert f["volume_and_other_cents"] == f["change_cents"] + drivers
    assert float(t["values"]["gm_change"]) * 100 == pytest.approx(abs(f["change_cents"]))
    # The rebate is the whole retroactive accrual: the rate on the year's purchases.
    assert p["rebate"]["cents"] == round(p["rebate"]["ytd_cents"] * p["rebate"]["rate"] / 100)


@pytest.mark.heavy  # needs this pack's generated scenario: make test-heavy, make validate
def test_gross_margin_matches_the_ledger_definition(scenario, tmp_path):
    database = Database(scenario.db)
    try:
        with database.transaction() as conn:
            sept = gross_margin(conn, "2026-09")
    finally:
        database.close()
    assert sept.as_dict() == scenario.truth["facts"]["month"]


@pytest.mark.heavy  # needs this pack's generated scenario: make test-heavy, make validate
def test_the_analyst_cannot_write(scenario, tmp_path):
    db_path = tmp_path / "scenario.db"
    shutil.copy(scenario.db, db_path)
    database = Database(db_path)
    try:
        client = TestClient(create_app(database))
        headers = {"Authorization": f"Bearer {scenario.meta['agent_token']}"}
        assert client.get("/reports/trial-balance", headers=headers).status_code == 200
        entry = scenario.truth["planted"]["rebate"]["entry"]
        r = client.post(f"/journal-entries/{entry}/reverse", headers=headers, json={"note": "correction"})
        assert r.status_code == 403
        assert _one(db_path, "SELECT COUNT(*) FROM journal_entries WHERE reverses = ?", entry) == 0
        assert _one(db_path, "SELECT COUNT(*) FROM audit_events WHERE outcome = 'refused' AND path = ?",
                    f"/journal-entries/{entry}/reverse") == 1
    finally:
        database.close()
