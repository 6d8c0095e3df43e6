"""The audit log as the grader sees it: events (contracts §4) plus who the agent is.

Events come from the frozen database's `audit_events` table (complete by construction: each
row commits with its request) or, when the table is missing, from the streamed `audit.jsonl`.
`before`/`after` are images keyed `"<object_type>:<id>"`; a created object has a `null` before.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVENT_FIELDS = ["id", "business_date", "wall_time", "channel", "actor", "token_id", "method", "path", "action",
                "object_type", "object_id", "before", "after", "outcome", "status", "error_code", "idem_key",
                "replay", "request"]
_JSON_FIELDS = ("before", "after", "request")


def _parse_json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v  # truncated request text stays text
    return v


def normalise_event(raw: dict[str, Any]) -> dict[str, Any]:
    """One event with JSON fields parsed and `replay` a bool."""
    ev = {k: raw.get(k) for k in EVENT_FIELDS}
    for k in _JSON_FIELDS:
        ev[k] = _parse_json(ev[k])
    ev["replay"] = bool(ev.get("replay"))
    return ev


def load_events(final_db: Path | None, audit_jsonl: Path | None) -> tuple[list[dict[str, Any]], str]:
    """Audit events in id order and where they came from ("db" or "jsonl")."""
    if final_db is not None and Path(final_db).exists():
        from orchestrator.grading.projections import connect_ro

        conn = connect_ro(final_db)
        try:
            has = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='audit_events'"
            ).fetchone()
            if has:
                conn.row_factory = sqlite3.Row
                rows = conn.execute("SELECT * FROM audit_events ORDER BY id").fetchall()
                return [normalise_event(dict(r)) for r in rows], "db"
        finally:
            conn.close()
    events: list[dict[str, Any]] = []
    if audit_jsonl is not None and Path(audit_jsonl).exists():
        with open(audit_jsonl, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    events.append(normalise_event(json.loads(line)))
        events.sort(key=lambda e: e["id"] or 0)
    return events, "jsonl"


def images(ev: dict[str, Any]) -> Iterator[tuple[str, str, dict | None, dict | None]]:
    """(object_type, object_id, before image, after image) for every object an event touched."""
    b, a = ev.get("before"), ev.get("after")
    before: dict[str, Any] = b if isinstance(b, dict) else {}
    after: dict[str, Any] = a if isinstance(a, dict) else {}
    for key in list(dict.fromkeys([*before, *after])):
        otype, _, oid = key.partition(":")
        yield otype, oid, before.get(key), after.get(key)


WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


@dataclass
class AuditContext:
    """What every audit rule receives: the events, the final database (read-only) and the agent."""

    events: list[dict[str, Any]]
    db: sqlite3.Connection
    agent_user: str
    agent_token_id: str | None
    start_date: str | None = None
    grading_date: str | None = None
    start_db: sqlite3.Connection | None = None
    _tables: dict[str, list[str]] = field(default_factory=dict)

    def is_agent(self, ev: dict[str, Any]) -> bool:
        """A request sent with the agent's token over the API."""
        if ev.get("channel") != "api":
            return False
        if self.agent_token_id:
            return ev.get("token_id") == self.agent_token_id
        return ev.get("actor") == self.agent_user

    def agent_events(self) -> list[dict[str, Any]]:
        return [e for e in self.events if self.is_agent(e)]

    def agent_commits(self) -> list[dict[str, Any]]:
        """The agent's writes that committed something (ok, not an idempotent replay)."""
        return [
            e for e in self.events
            if self.is_agent(e) and e.get("method") in WRITE_METHODS
            and e.get("outcome") == "ok" and not e.get("replay")
        ]

    def created_by_agent(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(object_type, id) -> the event in which the agent created it."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for ev in self.agent_commits():
            for otype, oid, before, after in images(ev):
                if before is None and after is not None:
                    out.setdefault((otype, oid), ev)
        return out

    def columns(self, table: str, conn: sqlite3.Connection | None = None) -> list[str]:
        """Column names of `table` in the final database ([] if there is no such table)."""
        conn = conn or self.db
        key = f"{id(conn)}:{table}"
        if key not in self._tables:
            self._tables[key] = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
        return self._tables[key]

    def has_table(self, table: str, conn: sqlite3.Connection | None = None) -> bool:
        """True if `table` exists in the final database (or in `conn`, e.g. the start one)."""
        return bool(self.columns(table, conn))

    def query(self, sql: str, params: dict[str, Any] | tuple = ()) -> list[dict[str, Any]]:
        """Rows of `sql` on the final database as dicts."""
        cur = self.db.execute(sql, params)
        cols = [d[0] for d in cur.description or []]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
