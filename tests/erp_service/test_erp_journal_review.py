"""The journal's counterparties (erp_service/domains/journal/actors.py): the reviewer returns an
unsupported submitted entry, approves and posts a supported one a day after submission, and the
scheduled close shuts the period so a later post is refused."""
from __future__ import annotations

import base64

from erp_company import build_company, client_for
from sqlalchemy import text

from erp_service.domains import org
from erp_service.sim import World

WORLD = {"journal_reviewer": {"user": "controller", "after_days": 1},
         "period_closes": [{"period": "2026-10", "on": "2026-10-13", "user": "controller"}]}


def _entry(cl, c, memo: str) -> str:
    r = cl.post("/journal-entries", headers=c.headers("staff_accountant"), json={
        "entry_date": "2026-10-08", "memo": memo,
        "lines": [{"account": "6400", "debit": 6000}, {"account": "1310", "credit": 6000}]})
    assert r.status_code == 201, r.text
    return r.json()["data"]["id"]


def _status(c, entry_id: str) -> str:
    with c.builder.db.transaction() as conn:
        return conn.execute(text("SELECT status FROM journal_entries WHERE id = :i"), {"i": entry_id}).scalar()


def test_reviewer_returns_unsupported_posts_supported_and_close_refuses_later_posts(tmp_path):
    c = build_company(tmp_path)
    c.builder.insert(org.approval_limits, user_id="controller", doc_type="journal_entry", limit_cents=10_000_000)
    cl = client_for(c)
    bare, backed = _entry(cl, c, "no support"), _entry(cl, c, "with support")
    r = cl.post(f"/journal-entries/{backed}/attachments", headers=c.headers("staff_accountant"),
                json={"filename": "s.txt", "content_type": "text/plain",
                      "content_base64": base64.b64encode(b"schedule").decode()})
    assert r.status_code == 201, r.text
    for e in (bare, backed):
        assert cl.post(f"/journal-entries/{e}/submit", headers=c.headers("staff_accountant")).status_code == 201
    c.builder.advance("2026-10-08", World(WORLD))        # same day: nothing is old enough yet
    assert (_status(c, bare), _status(c, backed)) == ("submitted", "submitted")
    c.builder.advance("2026-10-09", World(WORLD))
    assert (_status(c, bare), _status(c, backed)) == ("returned", "posted")
    with c.builder.db.transaction() as conn:
        reason = conn.execute(text("SELECT reason FROM status_history WHERE doc_id = :i AND to_status = 'returned'"),
                              {"i": bare}).scalar()
    assert "no support" in reason.lower()
    small = cl.post("/journal-entries", headers=c.headers("staff_accountant"), json={
        "entry_date": "2026-10-09", "memo": "small",
        "lines": [{"account": "6400", "debit": 100}, {"account": "1310", "credit": 100}]}).json()["data"]["id"]
    c.builder.advance("2026-10-13", World(WORLD))
    with c.builder.db.transaction() as conn:
        assert conn.execute(text("SELECT status FROM periods WHERE id = '2026-10'")).scalar() == "closed"
    r = cl.post(f"/journal-entries/{small}/post", headers=c.headers("staff_accountant"))
    assert r.status_code == 409 and r.json()["code"] == "period_closed"
    assert _status(c, small) == "draft"


def test_without_a_reviewer_nothing_moves(tmp_path):
    c = build_company(tmp_path)
    cl = client_for(c)
    e = _entry(cl, c, "waiting")
    cl.post(f"/journal-entries/{e}/submit", headers=c.headers("staff_accountant"))
    c.builder.advance("2026-10-12", World({}))
    assert _status(c, e) == "submitted"
