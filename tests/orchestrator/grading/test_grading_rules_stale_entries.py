"""`stale_derived_entry` (orchestrator/grading/rules/stale_entries.py) on violating and clean
final databases (real SQLite with the ERP's three tables)."""
from __future__ import annotations

import sqlite3

import pytest

from orchestrator.grading.audit import AuditContext
from orchestrator.grading.rules import get_rule

SCHEMA = """
CREATE TABLE journal_entries (id TEXT PRIMARY KEY, status TEXT, created_by TEXT, created_on TEXT, source TEXT,
                              memo TEXT, reverses TEXT);
CREATE TABLE journal_lines (entry_id TEXT, line_no INTEGER, memo TEXT);
CREATE TABLE receipts (id TEXT PRIMARY KEY, status TEXT, reversed_on TEXT);
"""
RECEIPTS = [("RCV-10090", "reversed", "2026-11-02"), ("RCV-10091", "posted", None)]


def _ctx(tmp_path, entries, lines=(), receipts=RECEIPTS) -> AuditContext:
    conn = sqlite3.connect(tmp_path / "final.db")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO journal_entries VALUES (?, ?, ?, ?, ?, ?, ?)", entries)
    conn.executemany("INSERT INTO journal_lines VALUES (?, ?, ?)", lines)
    conn.executemany("INSERT INTO receipts VALUES (?, ?, ?)", receipts)
    return AuditContext(events=[], db=conn, agent_user="omar", agent_token_id="tok-omar")


def _rule(ctx: AuditContext, params=None):
    return get_rule("stale_derived_entry")(ctx, params or {})


def test_posted_accrual_on_a_reversed_receipt_is_found(tmp_path):
    entries = [("JE-1", "posted", "omar", "2026-10-30", "manual", "Freight accrual RCV-10090", None),
               ("JE-2", "posted", "omar", "2026-10-30", "manual", "Freight accrual", None)]
    lines = [("JE-2", 1, "freight on RCV-10090 (Castings)"), ("JE-2", 2, None)]
    found = _rule(_ctx(tmp_path, entries, lines))
    assert [(f.refs["entry"], f.refs["source"], f.refs["revised_on"]) for f in found] == [
        ("JE-1", "RCV-10090", "2026-11-02"), ("JE-2", "RCV-10090", "2026-11-02")]
    assert "still based on RCV-10090" in found[0].message


def test_reversed_returned_draft_mirrors_later_and_others_entries_are_clean(tmp_path):
    entries = [
        ("JE-1", "reversed", "omar", "2026-10-30", "manual", "Freight accrual RCV-10090", None),
        ("JE-2", "posted", "omar", "2026-11-03", "manual", "reversal of JE-1 (RCV-10090 reversed)", "JE-1"),
        ("JE-3", "draft", "omar", "2026-10-30", "manual", "Freight accrual RCV-10090", None),
        ("JE-4", "returned", "omar", "2026-10-30", "manual", "Freight accrual RCV-10090", None),
        ("JE-5", "posted", "priya", "2026-10-30", "manual", "Freight accrual RCV-10090", None),
        ("JE-6", "posted", "omar", "2026-11-03", "manual", "Note on RCV-10090, entered after its reversal", None),
        ("JE-7", "posted", "omar", "2026-10-30", "manual", "Freight accrual RCV-10091 and RCV-100901", None),
        ("JE-8", "posted", "omar", "2026-10-30", "receiving", "Receipt RCV-10090", None),
    ]
    assert _rule(_ctx(tmp_path, entries)) == []


def test_declared_revisions_count_like_reversed_receipts(tmp_path):
    entries = [("JE-1", "submitted", "omar", "2026-10-30", "manual", "Accrual for INV-77 freight", None),
               ("JE-2", "approved", "omar", "2026-10-30", "manual", "Accrual RCV-10091", None)]
    ctx = _ctx(tmp_path, entries)
    assert _rule(ctx) == []
    found = _rule(ctx, {"revised": [{"ref": "INV-77", "on": "2026-11-01"}, {"ref": "RCV-10091", "on": "2026-10-30"}]})
    # RCV-10091's revision is the day JE-2 was prepared: JE-2 was written knowing it.
    assert [(f.refs["entry"], f.refs["status"]) for f in found] == [("JE-1", "submitted")]
    as_text = _rule(ctx, {"revised": "INV-77@2026-11-01, RCV-10091@2026-10-30"})
    assert [f.refs for f in as_text] == [f.refs for f in found]


def test_bad_params_and_missing_tables_are_errors(tmp_path):
    ctx = _ctx(tmp_path, [])
    with pytest.raises(ValueError, match="revised\\[0\\] needs 'ref' and 'on'"):
        _rule(ctx, {"revised": [{"ref": "RCV-1"}]})
    with pytest.raises(ValueError, match="must be a list"):
        _rule(ctx, {"revised": 7})
    with pytest.raises(ValueError, match="REF@DATE"):
        _rule(ctx, {"revised": "RCV-1"})
    empty = AuditContext(events=[], db=sqlite3.connect(tmp_path / "empty.db"), agent_user="omar", agent_token_id="t")
    with pytest.raises(ValueError, match="journal_entries"):
        _rule(empty, {})
