"""A fault's record exists, complete, before the client gets the faulted answer.

Against a real `python -m erp_service serve` subprocess: after each injected 503 (and each
delayed answer), one immediate read of `/control/faults` — no polling — already returns the
record with the fields that need the served result (served_status, committed, audit_after).
Both 503s stay byte-identical.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from erp_finance_support import finance_company
from erp_server import Served, auth, message, start_server

from erp_service.http.fault_layer import UNAVAILABLE_BODY

ROUNDS = 8   # each kind several times: the old order (answer, then record) lost this race at times


@pytest.fixture()
def served(tmp_path_factory) -> Any:
    """A server on a finance company with alternating fail_before / lost_response faults on
    POST /outbox, then one slow answer; stopped at teardown."""
    company = finance_company(tmp_path_factory.mktemp("fault-records-company"))
    company.builder.db.close()
    tmp = tmp_path_factory.mktemp("fault-records")
    db = tmp / "company.db"
    shutil.copy(company.path, db)
    rules = [f"{'fail_before' if n % 2 else 'lost_response'}:POST /outbox@{n}" for n in range(1, 2 * ROUNDS + 1)]
    rules.append(f"slow:POST /outbox@{2 * ROUNDS + 1},delay=0.3")
    s: Served = start_server(Path(tmp), db, faults=",".join(rules))
    try:
        yield s, company.tokens["ap_clerk"]
    finally:
        s.stop()


def _audit_tail(s: Served) -> int:
    """The id of the last audit event."""
    after = 0
    while True:
        page = s.control.get("/control/audit", params={"after": after, "limit": 10000}).json()
        if not page["items"]:
            return after
        after = page["last_id"]


def test_the_record_exists_when_the_client_gets_the_answer(served):
    s, clerk = served
    answers: dict[str, set[tuple]] = {"fail_before": set(), "lost_response": set()}
    for n in range(1, 2 * ROUNDS + 1):
        kind = "fail_before" if n % 2 else "lost_response"
        before = _audit_tail(s)
        r = s.agent.post("/outbox", json=message(n), headers=auth(clerk, f"key-{n}"))
        # The very next thing: one read of the fault log, no waiting.
        items = s.control.get("/control/faults", params={"after": n - 1}).json()["items"]
        assert r.status_code == 503 and r.content == UNAVAILABLE_BODY
        answers[kind].add((r.status_code, r.content, r.headers["content-type"], r.headers["content-length"],
                           r.headers.get("retry-after")))
        assert len(items) == 1, f"request {n} ({kind}): the fault record was not there yet: {items}"
        rec = items[0]
        assert rec["seq"] == n and rec["kind"] == kind and rec["idem_key"] == f"key-{n}"
        assert rec["client_status"] == 503 and rec["audit_before"] == before
        if kind == "fail_before":
            assert rec["served_status"] is None and rec["committed"] is False and rec["audit_after"] == before
        else:
            # The write ran and was audited before the record was completed.
            assert rec["served_status"] == 201 and rec["committed"] is True and rec["audit_after"] == before + 1
        assert rec["audit_after"] == _audit_tail(s)
    # The two kinds answer with the very same bytes and headers, every time.
    assert len(answers["fail_before"]) == 1 and answers["fail_before"] == answers["lost_response"]

    # A delayed answer: the record is there once the (real) answer arrives, too.
    n = 2 * ROUNDS + 1
    before = _audit_tail(s)
    r = s.agent.post("/outbox", json=message(n), headers=auth(clerk, f"key-{n}"))
    items = s.control.get("/control/faults", params={"after": n - 1}).json()["items"]
    assert r.status_code == 201
    assert len(items) == 1
    rec = items[0]
    assert rec["kind"] == "slow" and rec["served_status"] == 201 and rec["client_status"] == 201
    assert rec["committed"] is True and rec["audit_after"] == before + 1 and rec["delay_s"] == 0.3
