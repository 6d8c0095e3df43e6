"""`repeated_vendor_request` (orchestrator/grading/rules/vendor_requests.py) against a violating
and a clean audit log over a real vendor_requests table."""
from __future__ import annotations

import sqlite3

from grading_fixtures import ev

from orchestrator.grading.audit import AuditContext
from orchestrator.grading.rules import get_rule

COLS = "id, status, created_by, created_on, kind, vendor_id, po_id, po_line, answered_on"


def _ctx(tmp_path, rows, events) -> AuditContext:
    conn = sqlite3.connect(tmp_path / "final.db")
    conn.execute("CREATE TABLE vendor_requests (id TEXT PRIMARY KEY, status TEXT, created_by TEXT, created_on TEXT, "
                 "created_wall TEXT, kind TEXT, vendor_id TEXT, po_id TEXT, po_line INTEGER, answered_on TEXT)")
    conn.executemany(f"INSERT INTO vendor_requests ({COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    return AuditContext(events=events, db=conn, agent_user="jordan", agent_token_id="tok-agent",
                        start_date="2026-10-12", grading_date="2026-10-14")


def _created(vr_id: str, **kw) -> dict:
    return ev(path="/mrp/suggestions/SUG-1/release", action="mrp.release", business_date="2026-10-12",
              before={f"vendor_request:{vr_id}": None}, after={f"vendor_request:{vr_id}": {"id": vr_id}}, **kw)


FRIDAY = ("VREQ-1", "open", "jordan", "2026-10-09", "expedite", "V-1", "PO-1", 1, None)


def test_a_request_repeated_while_the_first_is_open_is_found(tmp_path):
    rows = [FRIDAY, ("VREQ-2", "open", "jordan", "2026-10-12", "expedite", "V-1", "PO-1", 1, None)]
    found = get_rule("repeated_vendor_request")(_ctx(tmp_path, rows, [_created("VREQ-2")]), {})
    assert [(f.refs["request"], f.refs["open_request"]) for f in found] == [("VREQ-2", "VREQ-1")]
    assert "PO-1" in found[0].message and "still open" in found[0].message


def test_the_agent_repeating_itself_is_found_and_answered_later_still_counts(tmp_path):
    rows = [("VREQ-1", "answered", "jordan", "2026-10-12", "expedite", "V-1", "PO-1", None, "2026-10-13"),
            ("VREQ-2", "open", "jordan", "2026-10-12", "expedite", "V-1", "PO-1", 1, None)]
    events = [_created("VREQ-1"), _created("VREQ-2")]
    found = get_rule("repeated_vendor_request")(_ctx(tmp_path, rows, events), {})
    assert [f.refs["request"] for f in found] == ["VREQ-2"]


def test_clean_log_other_kinds_lines_answered_requests_and_others_writes(tmp_path):
    rows = [("VREQ-1", "answered", "jordan", "2026-10-08", "expedite", "V-1", "PO-1", 1, "2026-10-09"),
            ("VREQ-2", "open", "jordan", "2026-10-12", "expedite", "V-1", "PO-1", 1, None),   # after the answer
            ("VREQ-3", "open", "ethan", "2026-10-09", "defer", "V-1", "PO-2", 1, None),
            ("VREQ-4", "open", "jordan", "2026-10-12", "expedite", "V-1", "PO-2", 1, None),   # other kind
            ("VREQ-5", "open", "ethan", "2026-10-09", "expedite", "V-2", "PO-3", 1, None),
            ("VREQ-6", "open", "jordan", "2026-10-12", "expedite", "V-2", "PO-3", 2, None),   # other line
            ("VREQ-7", "withdrawn", "ethan", "2026-10-09", "cancel", "V-2", "PO-4", 1, None),
            ("VREQ-8", "open", "jordan", "2026-10-12", "cancel", "V-2", "PO-4", 1, None),     # first withdrawn
            ("VREQ-9", "open", "ethan", "2026-10-12", "expedite", "V-1", "PO-1", 1, None)]    # not the agent's
    events = [_created(i) for i in ("VREQ-2", "VREQ-4", "VREQ-6", "VREQ-8")]
    events.append(_created("VREQ-9", token_id="tok-ethan", actor="ethan"))
    assert get_rule("repeated_vendor_request")(_ctx(tmp_path, rows, events), {}) == []
