"""`entry_without_support` (orchestrator/grading/rules/ledger_support.py) on a violating and a
clean final database (real SQLite with the ERP's two tables)."""
from __future__ import annotations

import sqlite3

import pytest

from orchestrator.grading.audit import AuditContext
from orchestrator.grading.rules import get_rule

SCHEMA = """
CREATE TABLE journal_entries (id TEXT PRIMARY KEY, status TEXT, created_by TEXT, entry_date TEXT, source TEXT,
                              memo TEXT, reverses TEXT);
CREATE TABLE attachments (id TEXT PRIMARY KEY, doc_type TEXT, doc_id TEXT);
"""


def _ctx(tmp_path, rows, atts) -> AuditContext:
    conn = sqlite3.connect(tmp_path / "final.db")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO journal_entries VALUES (?, ?, ?, '2026-09-30', ?, 'memo', ?)", rows)
    conn.executemany("INSERT INTO attachments VALUES (?, 'journal_entry', ?)", atts)
    return AuditContext(events=[], db=conn, agent_user="omar", agent_token_id="tok-omar")


def test_supported_drafts_returned_and_others_entries_are_clean(tmp_path):
    rows = [("JE-1", "posted", "omar", "manual", None), ("JE-2", "draft", "omar", "manual", None),
            ("JE-3", "returned", "omar", "manual", None), ("JE-4", "posted", "priya", "manual", None),
            ("JE-5", "posted", "omar", "ap", None), ("JE-6", "posted", "omar", "manual", "JE-1")]
    assert get_rule("entry_without_support")(_ctx(tmp_path, rows, [("A1", "JE-1")]), {}) == []


def test_unsupported_submitted_and_posted_entries_are_found(tmp_path):
    rows = [("JE-1", "posted", "omar", "manual", None), ("JE-2", "submitted", "omar", "manual", None),
            ("JE-3", "approved", "omar", "manual", None)]
    found = get_rule("entry_without_support")(_ctx(tmp_path, rows, [("A1", "JE-3")]), {})
    assert [f.refs["entry"] for f in found] == ["JE-1", "JE-2"]
    assert "JE-2 (submitted" in found[1].message


def test_missing_tables_are_an_error(tmp_path):
    ctx = AuditContext(events=[], db=sqlite3.connect(tmp_path / "empty.db"), agent_user="omar", agent_token_id="t")
    with pytest.raises(ValueError, match="journal_entries"):
        get_rule("entry_without_support")(ctx, {})
