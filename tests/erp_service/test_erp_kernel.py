"""The bb-erp kernel end to end: the real `python -m erp_service serve` process (ready line,
shutdown by the control API and by SIGTERM, token separation between the two listeners, fault
kinds and their commit semantics, seeded profiles), idempotent replay and key reuse, the atomic
day advance, and the canonical hash."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from erp_finance_support import finance_company
from erp_server import CONTROL_TOKEN, REPO, Served, auth, business_state, copy_db, message, start_server
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from erp_service import sim
from erp_service.canonical import canonical_hash
from erp_service.http.app import create_app
from erp_service.http.control import create_control_app
from erp_service.http.fault_layer import UNAVAILABLE_BODY, FaultLog
from erp_service.kernel.db import Database
from erp_service.kernel.schema import audit_events, idempotency
from erp_service.sim import AdvanceError, World, sim_log


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A finance company database (closed), copied by every test that changes it."""
    c = finance_company(tmp_path_factory.mktemp("kernel-template"))
    c.builder.db.close()
    return c.path, dict(c.tokens)


@pytest.fixture()
def serve(tmp_path, template):
    """Start servers on fresh copies of the template; every one is stopped at teardown."""
    started: list[Served] = []

    def start(name: str = "company.db", **kwargs: Any) -> Served:
        db = copy_db(template, tmp_path, name)
        s = start_server(tmp_path, db, **kwargs)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


def test_ready_line_health_and_shutdown_via_control(serve, template):
    s = serve()
    assert set(s.ready) >= {"event", "agent", "control", "pid", "faults"}
    assert s.ready["pid"] == s.proc.pid and s.ready["faults"] is None
    assert s.ready["agent"].startswith("http://127.0.0.1:") and s.ready["control"] != s.ready["agent"]
    health = s.control.get("/control/health")
    assert health.status_code == 200 and health.json() == {"ok": True, "business_date": "2026-10-08"}
    r = s.agent.get("/whoami", headers=auth(template[1]["ap_clerk"]))
    assert r.status_code == 200 and r.headers["X-Business-Date"] == "2026-10-08"
    assert s.control.post("/control/shutdown").json() == {"ok": True}
    assert s.proc.wait(timeout=15) == 0
    deadline = time.time() + 5
    while time.time() < deadline and (not s.lines or json.loads(s.lines[-1]).get("event") != "stopped"):
        time.sleep(0.05)
    assert json.loads(s.lines[-1]) == {"event": "stopped"}


def test_sigterm_stops_cleanly(serve):
    s = serve()
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(timeout=15) == 0
    with pytest.raises(httpx.ConnectError):
        httpx.get(s.ready["agent"] + "/whoami", timeout=2)


def test_serve_refuses_missing_db_and_short_token(tmp_path):
    short = tmp_path / "short.token"
    short.write_text("short")
    out = subprocess.run([sys.executable, "-m", "erp_service", "serve", "--db", str(tmp_path / "none.db"),
                          "--control-token-file", str(short)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and json.loads(out.stdout.splitlines()[0])["event"] == "error"


def test_control_and_user_tokens_are_separate(serve, template):
    s = serve()
    user = template[1]["controller"]
    # A user token (even the controller's) never works on the control API.
    for method, path in (("GET", "/control/health"), ("POST", "/control/flush"), ("GET", "/control/audit"),
                         ("GET", "/control/faults"), ("GET", "/control/snapshot"), ("POST", "/control/shutdown")):
        for headers in (auth(user), {}, auth(CONTROL_TOKEN + "x")):
            r = httpx.request(method, s.ready["control"] + path, headers=headers, timeout=10)
            assert r.status_code == 401, (method, path, headers, r.text)
            assert r.json()["code"] == "unauthorized"
    # The control token never works on the agent API.
    for method, path in (("GET", "/whoami"), ("GET", "/vendors"), ("POST", "/outbox")):
        r = s.agent.request(method, path, headers=auth(CONTROL_TOKEN), json=message(1) if method == "POST" else None)
        assert r.status_code == 401, (method, path, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
    # Neither listener serves the other's routes.
    assert s.agent.get("/control/health", headers=auth(CONTROL_TOKEN)).status_code in (401, 404)
    assert s.control.get("/whoami").status_code == 404
    assert s.proc.poll() is None


def test_control_audit_tail_snapshot_and_hash(serve, template, tmp_path):
    s = serve()
    h = auth(template[1]["ap_clerk"])
    assert s.agent.post("/outbox", json=message(1), headers=h).status_code == 201
    assert s.agent.get("/vendors", headers=h).status_code == 200
    assert s.agent.get("/vendors", headers=auth("nope")).status_code == 401
    items = s.control.get("/control/audit").json()["items"]
    assert [(e["method"], e["path"], e["status"]) for e in items] == [
        ("POST", "/outbox", 201), ("GET", "/vendors", 200), ("GET", "/vendors", 401)]
    tail = s.control.get("/control/audit", params={"after": items[0]["id"]}).json()
    assert [e["id"] for e in tail["items"]] == [e["id"] for e in items[1:]] and tail["last_id"] == items[-1]["id"]
    snap = s.control.get("/control/snapshot")
    assert snap.status_code == 200 and snap.content[:16] == b"SQLite format 3\x00"
    (tmp_path / "snap.db").write_bytes(snap.content)
    assert s.control.get("/control/canonical-hash").json()["sha256"] == canonical_hash(tmp_path / "snap.db")


# --- faults ---------------------------------------------------------------------------------


def fault_records(s: Served, n: int, after: int = 0) -> list[dict[str, Any]]:
    """The fault records once there are `n` (the layer appends a record just after answering)."""
    deadline = time.monotonic() + 5
    while True:
        items = s.control.get("/control/faults", params={"after": after}).json()["items"]
        if len(items) >= n or time.monotonic() > deadline:
            return items
        time.sleep(0.02)


def outbox_count(s: Served, secret: str) -> int:
    return s.agent.get("/outbox", headers=auth(secret)).json()["data"]["total"]


def test_fail_before_commits_nothing_and_lost_response_commits_with_same_bytes(serve, template):
    clerk = template[1]["ap_clerk"]
    fb = serve("fb.db", faults="fail_before:POST /outbox@1")
    lr = serve("lr.db", faults="lost_response:POST /outbox@1")
    answers = {}
    for name, s in (("fail_before", fb), ("lost_response", lr)):
        audit_before = s.control.get("/control/audit").json()["last_id"]
        r = s.agent.post("/outbox", json=message(1), headers=auth(clerk, "k-1"))
        assert r.status_code == 503 and r.content == UNAVAILABLE_BODY
        answers[name] = (r.status_code, r.content, r.headers["content-type"], r.headers.get("retry-after"))
        faults = fault_records(s, 1)
        assert len(faults) == 1 and faults[0]["kind"] == name and faults[0]["idem_key"] == "k-1"
        audit_after = s.control.get("/control/audit").json()["last_id"]
        if name == "fail_before":
            # Nothing reached the ERP: no audit row, no message.
            assert audit_after == audit_before and outbox_count(s, clerk) == 0
            assert faults[0]["committed"] is False and faults[0]["served_status"] is None
        else:
            # The write committed; only the answer was lost.
            assert audit_after == audit_before + 1 and outbox_count(s, clerk) == 1
            assert faults[0]["committed"] is True and faults[0]["served_status"] == 201
        # The retry with the same key: a fresh write after fail_before, a replay after lost_response.
        retry = s.agent.post("/outbox", json=message(1), headers=auth(clerk, "k-1"))
        assert retry.status_code == 201
        assert (retry.headers.get("Idempotent-Replay") == "true") == (name == "lost_response")
        assert outbox_count(s, clerk) == 1
        # The fault was not recorded where the agent can read it.
        assert "fault" not in json.dumps(s.agent.get("/audit", headers=auth(clerk)).json()).lower()
    # The agent cannot tell the two apart.
    assert answers["fail_before"] == answers["lost_response"]


def test_slow_commits_and_delays(serve, template):
    clerk = template[1]["ap_clerk"]
    s = serve(faults="slow:POST /outbox@1,delay=1.5")
    t0 = time.monotonic()
    r = s.agent.post("/outbox", json=message(1), headers=auth(clerk))
    assert r.status_code == 201 and time.monotonic() - t0 >= 1.4
    t1 = time.monotonic()
    assert s.agent.post("/outbox", json=message(2), headers=auth(clerk)).status_code == 201
    assert time.monotonic() - t1 < 1.0
    assert outbox_count(s, clerk) == 2
    (fault,) = fault_records(s, 1)
    assert fault["kind"] == "slow" and fault["committed"] is True and fault["client_status"] == 201


def test_nth_counting_and_segment_wildcard(serve, template):
    clerk = template[1]["ap_clerk"]
    s = serve(faults="fail_before:GET /vendors@2,fail_before:GET /vendors/*@1")
    statuses = [s.agent.get(p, headers=auth(clerk)).status_code
                for p in ("/vendors", "/vendors/V-0101", "/vendors", "/vendors/V-0102", "/vendors", "/vendors/V-0101")]
    # /vendors is hit on its 2nd request only; /vendors/* on its 1st only; `*` is one segment.
    assert statuses == [200, 503, 503, 200, 200, 200]
    assert [f["path"] for f in fault_records(s, 2)] == ["/vendors/V-0101", "/vendors"]
    assert fault_records(s, 1, after=1)[0]["seq"] == 2


def test_flaky_writes_profile_is_deterministic(serve, template):
    clerk = template[1]["ap_clerk"]
    runs = []
    for name in ("a.db", "b.db"):
        s = serve(name, faults="flaky-writes:seed=3,rate=0.3")
        statuses = []
        for i in range(24):
            statuses.append(s.agent.post("/outbox", json=message(i), headers=auth(clerk, f"key-{i}")).status_code)
            if i % 4 == 0:
                statuses.append(s.agent.get("/outbox", headers=auth(clerk)).status_code)  # reads are never hit
        kinds = [(f["kind"], f["path"], f["idem_key"]) for f in fault_records(s, statuses.count(503))]
        runs.append((statuses, kinds, s.control.get("/control/canonical-hash").json()["sha256"]))
        s.stop()
    assert runs[0] == runs[1]
    statuses, kinds, _ = runs[0]
    assert 503 in statuses and 201 in statuses and len(kinds) == statuses.count(503)
    assert {k for k, _, _ in kinds} <= {"fail_before", "lost_response"}


PRELUDE = """
import erp_service.http.fault_layer as _fl
_orig = _fl.FaultLayer.__init__
def _init(self, *a, **k):
    print('{"event": "fault-layer-installed"}', flush=True)
    _orig(self, *a, **k)
_fl.FaultLayer.__init__ = _init
"""


def test_no_fault_layer_without_faults(serve, template):
    clean = serve("clean.db", python_prelude=PRELUDE)
    faulty = serve("faulty.db", faults="fail_before:POST /nowhere@1", python_prelude=PRELUDE)
    assert clean.ready["event"] == "ready" and clean.ready["faults"] is None
    # The marker is printed before the ready line, only when a fault layer is built.
    assert json.loads(faulty.lines[0])["event"] == "fault-layer-installed"
    assert json.loads(faulty.lines[1])["event"] == "ready"
    assert clean.agent.get("/whoami", headers=auth(template[1]["ap_clerk"])).status_code == 200
    assert clean.control.get("/control/faults").json() == {"items": []}
    assert all("fault-layer" not in line for line in clean.lines)


# --- idempotency ----------------------------------------------------------------------------


def test_idempotent_replay_and_key_reuse(template, tmp_path):
    db = Database(copy_db(template, tmp_path))
    try:
        cl = TestClient(create_app(db, World({})))
        clerk, sup = template[1]["ap_clerk"], template[1]["ap_supervisor"]
        first = cl.post("/outbox", json=message(1), headers=auth(clerk, "same-key"))
        assert first.status_code == 201 and "Idempotent-Replay" not in first.headers
        state = business_state(db)
        again = cl.post("/outbox", json=message(1), headers=auth(clerk, "same-key"))
        assert again.status_code == 201 and again.headers["Idempotent-Replay"] == "true"
        assert again.json() == first.json()
        assert business_state(db) == state
        # Same key, another body / another path: refused, nothing changes.
        for path, body in (("/outbox", message(2)), ("/escalations", {"record_type": "vendor", "record_id": "V-0101",
                                                                       "to": "controller", "reason": "other"})):
            reuse = cl.post(path, json=body, headers=auth(clerk, "same-key"))
            assert reuse.status_code == 409 and reuse.json()["code"] == "idempotency_key_reused", reuse.text
            assert reuse.headers["content-type"].startswith("application/problem+json")
            assert business_state(db) == state
        # Key order in the body does not matter (canonical body); keys are per user.
        reordered = dict(reversed(list(message(1).items())))
        assert cl.post("/outbox", json=reordered, headers=auth(clerk, "same-key")).headers["Idempotent-Replay"] == "true"
        other_user = cl.post("/outbox", json=message(1), headers=auth(sup, "same-key"))
        assert other_user.status_code == 201 and "Idempotent-Replay" not in other_user.headers
        # A refused write does not store its key: the corrected request goes through.
        bad = cl.post("/outbox", json={**message(3), "surprise": 1}, headers=auth(clerk, "k-2"))
        assert bad.status_code == 422
        assert cl.post("/outbox", json=message(3), headers=auth(clerk, "k-2")).status_code == 201
        with db.transaction() as conn:
            rows = conn.execute(select(audit_events.c.idem_key, audit_events.c.replay, audit_events.c.status,
                                       audit_events.c.error_code).where(audit_events.c.idem_key == "same-key")
                                .order_by(audit_events.c.id)).all()
            stored = conn.execute(select(func.count()).select_from(idempotency)).scalar()
        assert [(r.replay, r.status, r.error_code) for r in rows] == [
            (0, 201, None), (1, 201, None), (0, 409, "idempotency_key_reused"), (0, 409, "idempotency_key_reused"),
            (1, 201, None), (0, 201, None)]
        assert stored == 3
    finally:
        db.close()


# --- the day advance ------------------------------------------------------------------------


class FailingActor:
    """A manager actor that writes through the pipeline and then, on `fail_on`, raises."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on: str | None = fail_on

    def __call__(self, day: sim.Day) -> None:
        day.act("controller", "msg.send", "/sim/note", {"day": day.date},
                lambda tx: tx.insert(sim_log, day=day.date, actor="test", kind="note", ref=None, payload="{}"))
        day.log("test", "logged", None, {"day": day.date})
        if day.date == self.fail_on:
            raise RuntimeError("the manager actor broke")


@pytest.fixture()
def failing_actor():
    actor = FailingActor("2026-10-12")
    sim.ACTORS["managers"].append(actor)
    try:
        yield actor
    finally:
        sim.ACTORS["managers"].remove(actor)


def sim_rows(db: Database) -> list[tuple[str, str]]:
    with db.transaction() as conn:
        return [(r.day, r.kind) for r in conn.execute(select(sim_log.c.day, sim_log.c.kind).order_by(sim_log.c.id))]


def test_advance_is_atomic_per_day_and_names_the_day(template, tmp_path, failing_actor):
    db = Database(copy_db(template, tmp_path))
    try:
        with db.transaction() as conn:
            audit_before = conn.execute(select(func.count()).select_from(audit_events)).scalar()
        with pytest.raises(AdvanceError) as err:
            sim.advance(db, World({}), "2026-10-13")
        assert err.value.day == "2026-10-12" and "2026-10-12" in str(err.value) and "broke" in str(err.value)
        # 10-09 (a workday) committed; the weekend moved the date only; 10-12 left nothing at all.
        assert db.business_date() == "2026-10-11"
        assert sim_rows(db) == [("2026-10-09", "note"), ("2026-10-09", "logged")]
        with db.transaction() as conn:
            days = [r[0] for r in conn.execute(select(audit_events.c.business_date)
                                               .where(audit_events.c.id > audit_before))]
        assert "2026-10-12" not in days and days.count("2026-10-09") == 1
        # The connection is usable (no transaction left open) and the next advance works.
        failing_actor.fail_on = None
        days = sim.advance(db, World({}), "2026-10-13")
        assert [d["date"] for d in days] == ["2026-10-12", "2026-10-13"]
        assert db.business_date() == "2026-10-13"
        assert [d for d, k in sim_rows(db) if k == "note"] == ["2026-10-09", "2026-10-12", "2026-10-13"]
    finally:
        db.close()


def test_control_advance_reports_the_failed_day(template, tmp_path, failing_actor):
    db = Database(copy_db(template, tmp_path))
    try:
        app = create_control_app(db, World({}), CONTROL_TOKEN, FaultLog(), lambda: None)
        cl = TestClient(app, headers={"Authorization": f"Bearer {CONTROL_TOKEN}"})
        r = cl.post("/control/advance", json={"to": "2026-10-14"})
        assert r.status_code == 409 and r.json()["code"] == "advance_failed"
        assert r.json()["day"] == "2026-10-12" and r.json()["business_date"] == "2026-10-11"
        assert cl.post("/control/advance", json={"to": "2026-10-01"}).status_code == 409      # backwards
        assert cl.post("/control/advance", json={"to": "2026-10-99"}).status_code == 422      # impossible
        failing_actor.fail_on = None
        ok = cl.post("/control/advance", json={"to": "2026-10-14"})
        assert ok.status_code == 200 and ok.json()["business_date"] == "2026-10-14"
        assert [d["date"] for d in ok.json()["days"]] == ["2026-10-12", "2026-10-13", "2026-10-14"]
        agent = TestClient(create_app(db, World({})))
        assert agent.get("/whoami", headers=auth(template[1]["ap_clerk"])).headers["X-Business-Date"] == "2026-10-14"
    finally:
        db.close()


# --- canonical hash -------------------------------------------------------------------------


def drive(path: Path, tokens: dict[str, str]) -> None:
    """A fixed sequence of writes, reads and refusals."""
    db = Database(path)
    try:
        cl = TestClient(create_app(db, World({})))
        clerk = auth(tokens["ap_clerk"])
        for i in range(3):
            cl.post("/outbox", json=message(i), headers=clerk)
        inv = cl.post("/ap-invoices", headers=clerk, json={
            "vendor": "V-0101", "invoice_no": "H-1", "invoice_date": "2026-10-05",
            "lines": [{"kind": "other", "description": "x", "amount": 125.5, "account": "6200"}]}).json()["data"]
        cl.post(f"/ap-invoices/{inv['id']}/validate", headers=clerk)
        cl.post(f"/ap-invoices/{inv['id']}/approve", headers=clerk)            # refused: no permission
        cl.post(f"/ap-invoices/{inv['id']}/approve", headers=auth(tokens["ap_supervisor"]))
        cl.get("/ap-invoices", headers=clerk)
        sim.advance(db, World({}), "2026-10-09")
    finally:
        db.close()


def test_canonical_hash_is_deterministic(template, tmp_path):
    a, b = copy_db(template, tmp_path, "a.db"), copy_db(template, tmp_path, "b.db")
    start = canonical_hash(a)
    assert canonical_hash(b) == start
    drive(a, template[1])
    time.sleep(1.1)   # other wall-clock times on the second copy
    drive(b, template[1])
    assert canonical_hash(a) == canonical_hash(b) != start
    # Page layout does not matter: a vacuumed copy hashes the same.
    import sqlite3
    conn = sqlite3.connect(b)
    conn.execute("VACUUM")
    conn.close()
    assert canonical_hash(b) == canonical_hash(a)
    # The CLI prints the same hash.
    out = subprocess.run([sys.executable, "-m", "erp_service", "canonical-hash", "--db", str(a)], cwd=REPO,
                         capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0 and out.stdout.strip() == canonical_hash(a)
    # One more request makes a difference.
    db = Database(a)
    try:
        TestClient(create_app(db, World({}))).post("/outbox", json=message(9), headers=auth(template[1]["ap_clerk"]))
    finally:
        db.close()
    assert canonical_hash(a) != canonical_hash(b)
