"""What an agent can send the ERP, and what the ERP does when its own storage fails.

Against a real `python -m erp_service serve` process and a real HTTP client:

- a 256 MiB body (chunked, and with a declared length) is a 413 problem, audited as invalid,
  nothing else changed, the ERP's memory never near the body's size, the ERP still serving;
- JSON nested 1,000 deep is a 422 (not a `RecursionError` 500), audited the same way;
- a body that is not UTF-8 is the contract's 422 (not FastAPI's 400);
- dates are YYYY-MM-DD strings only (no Unix timestamps);
- a database locked by another process, and a full disk (a real, small tmpfs), are 503
  problem+json answers on the agent API and the control API, `/control/health` says so, and
  the ERP works again when the storage does (a full disk leaves no audit row: the row needs
  the disk too);
- `delay=inf` (and other non-finite or absurd delays) in a fault spec is refused up front.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from erp_finance_support import finance_company
from erp_server import REPO, Served, auth, business_state, copy_db, message, start_server

from erp_service.faults import MAX_DELAY_S, FaultSpecError, parse_fault_spec
from erp_service.http.limits import MAX_BODY_BYTES, MAX_JSON_DEPTH, json_depth
from erp_service.kernel.db import Database

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A finance company database (closed), copied by every test."""
    c = finance_company(tmp_path_factory.mktemp("integrity-erp-template"))
    c.builder.db.close()
    return c.path, dict(c.tokens)


@pytest.fixture()
def server(tmp_path, template) -> Iterator[tuple[Served, dict[str, str]]]:
    s = start_server(tmp_path, copy_db(template, tmp_path))
    try:
        yield s, template[1]
    finally:
        s.stop()


def _state(s: Served, tmp_path: Path) -> str:
    """The business state (every table but audit and idempotency) of a snapshot."""
    snap = tmp_path / f"snap-{uuid.uuid4().hex[:6]}.db"
    snap.write_bytes(s.control.get("/control/snapshot").content)
    db = Database(snap)
    try:
        return business_state(db)
    finally:
        db.close()


def _audit(s: Served, after: int = 0) -> list[dict[str, Any]]:
    return s.control.get("/control/audit", params={"after": after, "limit": 10000}).json()["items"]


def _last_id(s: Served) -> int:
    items = _audit(s)
    return items[-1]["id"] if items else 0


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _is_problem(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    doc = r.json()
    assert doc["status"] == status and doc["code"] == code, doc
    return doc


# --- oversized and over-deep bodies ----------------------------------------------------------


def _chunks(total: int, size: int = MIB) -> Iterator[bytes]:
    block = b'{"pad":"' + b"x" * (size - 8)
    sent = 0
    while sent < total:
        piece = block[: min(size, total - sent)]
        sent += len(piece)
        yield piece


def test_a_256_mib_body_is_a_413_and_the_erp_survives(server, tmp_path):
    s, tokens = server
    clerk = tokens["ap_clerk"]
    before_state, before_id = _state(s, tmp_path), _last_id(s)
    rss_before = _peak_rss_mib(s.proc.pid)
    answers = []
    # Chunked (no length declared: the layer must stop buffering on its own) ...
    answers.append(s.agent.post("/outbox", content=_chunks(256 * MIB),
                                headers={**auth(clerk), "Content-Type": "application/json"}, timeout=120))
    # ... and with the length declared up front.
    answers.append(s.agent.post("/outbox", content=_chunks(256 * MIB),
                                headers={**auth(clerk), "Content-Type": "application/json",
                                         "Content-Length": str(256 * MIB)}, timeout=120))
    for r in answers:
        doc = _is_problem(r, 413, "payload_too_large")
        assert str(MAX_BODY_BYTES) in doc["detail"] and doc["business_date"]
    # The ERP never held the body: its peak memory grew by far less than one body.
    assert _peak_rss_mib(s.proc.pid) - rss_before < 64, (rss_before, _peak_rss_mib(s.proc.pid))
    rows = _audit(s, before_id)
    assert [(r["outcome"], r["status"], r["error_code"], r["path"], r["action"]) for r in rows] == \
        [("invalid", 413, "payload_too_large", "/outbox", "msg.send")] * 2
    assert all(r["actor"] for r in rows)   # the refusal is the agent's, under its own name
    assert _state(s, tmp_path) == before_state
    # Still serving: health, and a normal write.
    assert s.control.get("/control/health").status_code == 200
    assert s.agent.post("/outbox", json=message(1), headers=auth(clerk)).status_code == 201
    assert s.proc.poll() is None


def test_a_body_just_over_the_limit_is_refused_and_one_at_the_limit_is_read(server):
    s, tokens = server
    clerk = tokens["ap_clerk"]
    pad = MAX_BODY_BYTES - len(b'{"to":"controller","subject":"s","body":""}')
    at_limit = b'{"to":"controller","subject":"s","body":"' + b"y" * pad + b'"}'
    assert len(at_limit) == MAX_BODY_BYTES
    r = s.agent.post("/outbox", content=at_limit, headers={**auth(clerk), "Content-Type": "application/json"})
    assert r.status_code != 413, r.text[:200]   # read and judged by the route (too long a body: 422)
    r = s.agent.post("/outbox", content=at_limit + b" ", headers={**auth(clerk), "Content-Type": "application/json"})
    _is_problem(r, 413, "payload_too_large")


@pytest.mark.parametrize("route", ["/outbox", "/ap-invoices", "/calls"])
def test_json_1000_deep_is_a_422_on_every_route(server, tmp_path, route):
    s, tokens = server
    clerk = tokens["ap_supervisor"]
    before_state, before_id = _state(s, tmp_path), _last_id(s)
    deep = '{"to":' + "[" * 1000 + "]" * 1000 + "}"
    r = s.agent.post(route, content=deep, headers={**auth(clerk), "Content-Type": "application/json"})
    doc = _is_problem(r, 422, "invalid")
    assert str(MAX_JSON_DEPTH) in doc["detail"]
    rows = _audit(s, before_id)
    assert [(x["outcome"], x["status"], x["error_code"]) for x in rows] == [("invalid", 422, "invalid")]
    assert _state(s, tmp_path) == before_state
    # Brackets inside strings are text, not nesting: such a body is judged by the route.
    r = s.agent.post("/outbox", json={**message(2), "body": "[" * 5000}, headers=auth(clerk))
    assert r.status_code == 201, r.text[:200]


def test_json_depth_counts_nesting_not_brackets_in_strings():
    assert json_depth(b'{"a": [1, {"b": "[[[[{{{{\\"]]]"}]}', 10) == 3
    assert json_depth(b"[" * 100 + b"]" * 100, 32) == 33   # stops counting past the limit
    assert json_depth(b"", 5) == 0


def test_a_body_that_is_not_utf8_is_a_422(server, tmp_path):
    s, tokens = server
    clerk = tokens["ap_clerk"]
    before_id = _last_id(s)
    raw = b'{"to":"controller","subject":"\xff\xfe","body":"x"}'
    for route in ("/outbox", "/ap-invoices/APINV-10001/hold"):
        r = s.agent.post(route, content=raw, headers={**auth(clerk), "Content-Type": "application/json"})
        doc = _is_problem(r, 422, "invalid")
        assert "UTF-8" in doc["detail"]
    assert [x["outcome"] for x in _audit(s, before_id)] == ["invalid", "invalid"]


# --- strict dates ------------------------------------------------------------------------------


def test_dates_are_iso_strings_only_on_the_agent_api(server):
    s, tokens = server
    clerk = tokens["ap_clerk"]
    # A query date: a Unix timestamp is refused, an ISO date works.
    r = s.agent.get("/ap-invoices", params={"due_before": "1796083200"}, headers=auth(clerk))
    assert "due_before" in _is_problem(r, 422, "invalid")["detail"]
    assert s.agent.get("/ap-invoices", params={"due_before": "2026-12-31"}, headers=auth(clerk)).status_code == 200
    # A body date: the payment run with a Unix timestamp for its pay date.
    r = s.agent.post("/payment-runs", json={"pay_date": 1796083200}, headers=auth(tokens["ap_supervisor"]))
    assert "pay_date" in _is_problem(r, 422, "invalid")["detail"]


def test_dates_are_iso_strings_only_on_the_control_api(server):
    s, _ = server
    r = s.control.post("/control/advance", json={"to": 1796083200})
    _is_problem(r, 422, "invalid")
    r = s.control.post("/control/advance", json={"to": "2026-13-01"})
    _is_problem(r, 422, "invalid")


# --- storage failures ----------------------------------------------------------------------------


def test_a_locked_database_is_a_503_on_both_apis_and_health_says_so(server, tmp_path):
    s, tokens = server
    clerk = tokens["ap_clerk"]
    db_path = Path(next(a for a in s.proc.args if a.endswith(".db")))
    holder = sqlite3.connect(str(db_path), isolation_level=None, timeout=1)
    holder.execute("BEGIN IMMEDIATE")    # another process holds the write lock: every BEGIN fails
    try:
        started = time.monotonic()
        r = s.control.post("/control/advance", json={"to": "2026-12-31"})
        doc = _is_problem(r, 503, "storage_unavailable")
        assert "locked" in doc["detail"]
        r = s.agent.post("/outbox", json=message(3), headers=auth(clerk))
        _is_problem(r, 503, "storage_unavailable")
        assert "locked" not in r.text   # the agent is not told internals
        h = s.control.get("/control/health")
        doc = _is_problem(h, 503, "storage_unavailable")
        assert doc["ok"] is False and "lock" in doc["detail"]
        assert time.monotonic() - started < 60
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert s.control.get("/control/health").status_code == 200
    assert s.agent.post("/outbox", json=message(4), headers=auth(clerk)).status_code == 201
    adv = s.control.post("/control/advance", json={"to": s.control.get("/control/health").json()["business_date"]})
    assert adv.status_code == 200, adv.text


@pytest.fixture()
def small_disk(tmp_path) -> Iterator[Path]:
    """A real 24 MiB tmpfs (the ERP's data folder on a disk that can fill up)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> Path:
    """Fill the filesystem of `folder` to the last byte; the filler file."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    assert os.statvfs(folder).f_bavail == 0
    return filler


def test_a_full_disk_is_a_503_problem_unaudited_and_health_tells_the_truth(small_disk, template, tmp_path):
    """A full disk (a real tmpfs filled to its last byte under the ERP's database): every request
    that needs to write, on either API, is a 503 problem+json `storage_unavailable` (never a
    plain-text 500), and `/control/health` is a 503 naming the last storage error.

    No audit row is recorded for those failures, by design: the ERP tries to audit each one
    (erp_service/http/app.py, `audit_failure` with the storage cause), but the audit row is a
    write to the same full disk (a WAL append), so it fails too and the answer goes out without
    it; a row is written only "where the storage can still take it" (a locked database and a full
    disk both refuse it). The test asserts that nothing at all was recorded (no partial row, no
    row of the refused writes), and, as a control that the audit query would show rows, that
    the first write once space is freed appears as exactly one new row.
    """
    db = small_disk / "company.db"
    shutil.copy(template[0], db)
    if db.stat().st_size > 16 * 1024 * 1024:
        pytest.skip("the template database does not fit the small disk")
    s = start_server(tmp_path, db)
    try:
        clerk = template[1]["ap_clerk"]
        assert s.control.get("/control/health").status_code == 200
        before_id = _last_id(s)
        filler = _fill(small_disk)
        answers = [s.agent.post("/outbox", json={**message(5), "body": "z" * 40_000}, headers=auth(clerk)),
                   s.agent.post("/outbox", json={**message(5), "body": "z" * 60_000}, headers=auth(clerk)),  # 422 unaudited
                   s.agent.get("/outbox", headers=auth(clerk))]
        for r in answers:
            doc = _is_problem(r, 503, "storage_unavailable")
            assert "ENOSPC" not in r.text and "full" not in doc["detail"]  # the agent is not told internals
        h = s.control.get("/control/health")
        doc = _is_problem(h, 503, "storage_unavailable")
        assert doc["ok"] is False and doc["last_storage_error"]
        r = s.control.post("/control/advance", json={"to": "2026-12-31"})
        _is_problem(r, 503, "storage_unavailable")
        # Free the space: the ERP works again and health says so.
        filler.unlink()
        assert s.control.get("/control/health").status_code == 200
        # By design nothing was recorded for the failures: the audit row needed the full disk too.
        assert _audit(s, before_id) == []
        r = s.agent.post("/outbox", json=message(6), headers=auth(clerk))
        assert r.status_code == 201, r.text
        [row] = _audit(s, before_id)  # the control: the same query shows the first write after
        assert (row["method"], row["path"], row["outcome"], row["status"]) == ("POST", "/outbox", "ok", 201), row
        subjects = [m["subject"] for m in s.agent.get("/outbox", headers=auth(clerk)).json()["data"]["items"]]
        assert "Note 6" in subjects and "Note 5" not in subjects
        assert s.proc.poll() is None
    finally:
        s.stop()


# --- fault spec delays -------------------------------------------------------------------------


@pytest.mark.parametrize("delay", ["inf", "-inf", "nan", "-1", "1e12", str(MAX_DELAY_S + 1), "soon"])
def test_absurd_slow_delays_are_refused(delay):
    with pytest.raises(FaultSpecError) as err:
        parse_fault_spec(f"slow:POST /outbox@1,delay={delay}")
    assert delay in str(err.value) and "slow:POST /outbox@1" in str(err.value)


def test_a_finite_delay_is_kept_and_serve_refuses_an_infinite_one(tmp_path, template):
    assert parse_fault_spec("slow:POST /outbox@1,delay=0.5").rules[0].delay_s == 0.5
    token = tmp_path / "control.token"
    token.write_text("control-token-0123456789abcdef\n")
    done = subprocess.run([sys.executable, "-m", "erp_service", "serve", "--db", str(copy_db(template, tmp_path)),
                           "--control-token-file", str(token), "--faults", "slow:POST /outbox@1,delay=inf"],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "bad fault spec" in done.stdout and "inf" in done.stdout


def test_with_faults_declared_an_oversized_body_is_still_a_413_and_takes_no_fault(tmp_path, template):
    s = start_server(tmp_path, copy_db(template, tmp_path), faults="fail_before:POST /outbox@1")
    try:
        clerk = template[1]["ap_clerk"]
        rss_before = _peak_rss_mib(s.proc.pid)
        r = s.agent.post("/outbox", content=_chunks(64 * MIB),
                         headers={**auth(clerk), "Content-Type": "application/json"}, timeout=120)
        _is_problem(r, 413, "payload_too_large")
        assert _peak_rss_mib(s.proc.pid) - rss_before < 32
        assert s.control.get("/control/faults").json()["items"] == []
        # The rule's first request is still to come: the next ordinary write takes it.
        r = s.agent.post("/outbox", json=message(7), headers=auth(clerk))
        assert r.status_code == 503
        assert [f["kind"] for f in s.control.get("/control/faults").json()["items"]] == ["fail_before"]
    finally:
        s.stop()
