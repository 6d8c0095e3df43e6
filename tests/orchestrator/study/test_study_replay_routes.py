"""The replay reproduces what a hostile or careless agent can send, not only the oracle's clean
requests: odd paths, queries, bodies that are not JSON, not UTF-8, too deep or too large, missing,
forged and borrowed tokens, idempotent retries and reused keys, unknown routes — on a real ERP
in this process, with a day's advance (the counterparties acting) in the middle.

The "attempt" here is the real ERP app on a copy of payment-run's seed-0 scenario, its tokens
re-keyed as every attempt's are; its audit trail is then replayed on a fresh copy.
"""
from __future__ import annotations

import copy
import datetime as dt
import json
import secrets
import shutil
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from erp_service.canonical import canonical_hash
from erp_service.http.app import create_app
from erp_service.http.limits import MAX_BODY_BYTES
from erp_service.kernel.db import Database
from erp_service.sim import advance
from erp_service.world import load_world
from orchestrator.scenarios.cache import ensure_scenario
from orchestrator.study.replay import read_audit_log, replay_attempt


def _rows(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM audit_events ORDER BY id")]
    finally:
        conn.close()


def _attempt(tmp_path: Path, requests) -> tuple[Path, list[dict], str, object]:
    """Run `requests(client, tokens, next_day)` against a re-keyed copy; (final db, audit rows, grading date, scenario)."""
    scenario = ensure_scenario("payment-run", 0, reference=False)
    db_path = tmp_path / "attempt.db"
    shutil.copyfile(scenario.db, db_path)
    conn = sqlite3.connect(db_path)
    fresh = {}
    for token_id, user in conn.execute("SELECT id, user_id FROM tokens").fetchall():
        fresh[user] = "ngv_" + secrets.token_hex(24)
        conn.execute("UPDATE tokens SET secret = ? WHERE id = ?", (fresh[user], token_id))
    conn.commit()
    conn.close()
    db = Database(db_path)
    world = load_world(scenario.world)
    meta = scenario.meta

    def next_day() -> None:
        advance(db, world, (dt.date.fromisoformat(db.business_date()) + dt.timedelta(days=1)).isoformat())

    with TestClient(create_app(db, world), raise_server_exceptions=False) as client:
        requests(client, fresh, meta["agent_user"], next_day)
    if meta["grading_date"] > db.business_date():
        advance(db, world, meta["grading_date"])
    db.close()
    rows = _rows(db_path)
    out = tmp_path / "audit.jsonl"
    out.write_text("".join(json.dumps({**r, "replay": bool(r["replay"])}) + "\n" for r in rows))
    return db_path, read_audit_log(out), str(meta["grading_date"]), scenario


def _hostile(client: TestClient, tokens: dict[str, str], me: str, next_day) -> None:
    mine = {"authorization": f"Bearer {tokens[me]}"}
    other = next(u for u in tokens if u != me)
    client.get("/vendors", params={"limit": "5", "offset": "1"}, headers=mine)
    client.get("/vendors/V%3F0101", headers=mine)                  # a '?' inside the path
    client.get("/vendors/Ünïcødé name", headers=mine)              # unicode and a space
    client.get("/vendors/a%2Fb", headers=mine)                      # an encoded slash
    client.post("/calls", content=b"not json{", headers=mine)
    client.post("/calls", content=b"\xff\xfe{}", headers=mine)      # not UTF-8
    client.post("/calls", content=b"[" * 40 + b"]" * 40, headers=mine)   # too deep
    client.post("/calls", content=b"x" * (MAX_BODY_BYTES + 10), headers=mine)  # too large
    client.post("/calls", content=("é" * 1500 + "{").encode(), headers=mine)  # long, not JSON
    client.post("/calls", content=b"[" * 1990 + b"\xff", headers=mine)   # refused, excerpt cut
    client.get("/vendors")                                          # no token
    client.get("/vendors", headers={"authorization": "Bearer ngv_forged_0000000000000000000000"})
    client.get("/vendors", headers={"authorization": f"Bearer {tokens[other]}"})   # borrowed
    body = {"purpose": "confirm bank-detail change VBA-10001", "party_type": "vendor", "party_id": "V-0102"}
    key = {**mine, "idempotency-key": "k-1"}
    client.post("/calls", content=json.dumps(body, indent=3).encode(), headers=key)   # no content type
    client.post("/calls", content=json.dumps(body, indent=3).encode(),                 # odd spacing
                headers={**key, "content-type": "application/json"})
    client.post("/calls", json=body, headers=key)                                      # an idempotent retry
    client.post("/calls", json={**body, "purpose": "other"}, headers=key)             # the key reused
    client.post("/escalations", json={"note": "Refuted by the vendor on the number on file.", "reason": "fraud_suspected",
                                      "record_id": "VBA-10002", "record_type": "vendor_bank_account",
                                      "to": "priya.raman"}, headers=mine)   # the controller answers it tomorrow
    next_day()
    client.post("/vendor-bank-accounts/VBA-10001/verify", json={"note": "called"}, headers=mine)
    client.delete("/no/such/route", headers=mine)
    client.patch("/calls/CALL-1", json={"x": 1}, headers=mine)
    client.post("/payment-runs", json={"bank_account": "OPER", "pay_date": "2026-13-45"}, headers=mine)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The hostile attempt, run once for the module."""
    return _attempt(tmp_path_factory.mktemp("hostile"), _hostile)


def test_hostile_requests_replay_exactly(hostile) -> None:
    final, rows, grading, scenario = hostile
    statuses = {r["status"] for r in rows if r["channel"] == "api"}
    assert {401, 409, 413, 422}.issubset(statuses) and any(r["replay"] for r in rows)
    assert any(r["channel"] == "sim" for r in rows)
    got = replay_attempt(scenario.db, scenario.world, rows, grading)
    assert got.divergence is None, got.divergence.text()
    assert got.unreplayable is None
    assert got.canonical_sha256 == canonical_hash(final)


@pytest.mark.parametrize("field, value", [
    ("status", 200), ("actor", None), ("object_id", "X-1"), ("idem_key", "k-2"), ("business_date", "2026-01-01"),
])
def test_any_altered_field_is_named(hostile, field: str, value) -> None:
    _, original, grading, scenario = hostile
    rows = copy.deepcopy(original)
    target = next(r for r in rows if r["channel"] == "api" and r["method"] == "POST" and r["status"] == 201)
    target[field] = value
    got = replay_attempt(scenario.db, scenario.world, rows, grading)
    assert got.divergence is not None
    # At the altered row, or (a key changed) at the retry that no longer finds it: never before.
    assert got.divergence.audit_id is not None and target["id"] <= got.divergence.audit_id <= target["id"] + 1


def test_a_request_longer_than_the_log_keeps_is_reported_not_replayed(tmp_path: Path) -> None:
    def long_note(client, tokens, me, _next_day) -> None:
        client.post("/vendor-bank-accounts/VBA-10001/verify", json={"note": "n" * 30_000},
                    headers={"authorization": f"Bearer {tokens[me]}"})

    _, rows, grading, scenario = _attempt(tmp_path, long_note)
    got = replay_attempt(scenario.db, scenario.world, rows, grading)
    assert got.unreplayable and "size limit" in got.unreplayable and got.divergence is None
    # A forger cannot use the mark to dodge the replay: a shorter text ending in it diverges.
    row = next(r for r in rows if r["channel"] == "api" and r["method"] == "POST")
    row["request"] = row["request"][:500] + "…"
    got = replay_attempt(scenario.db, scenario.world, rows, grading)
    assert got.unreplayable is None and got.divergence is not None
