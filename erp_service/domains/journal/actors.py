"""The journal's counterparties: the reviewer of manual entries and the period close.

- The reviewer (`@actor("approvers")`), from ``world["journal_reviewer"]``, e.g.
  ``{"user": "priya.raman", "after_days": 1, "require_support": true, "post": true}``: every
  workday, each manual entry submitted at least `after_days` calendar days ago is returned to
  its preparer when it carries no support attachment (and `require_support` is set), otherwise
  approved and, with `post`, posted into its period. Refusals (the reviewer prepared it, over
  their limit, a closed period) are audited and the entry stays where it is.
- The close (`@actor("managers")`, after the reviewer), from ``world["period_closes"]``, e.g.
  ``[{"period": "2026-09", "on": "2026-10-05", "user": "priya.raman"}]``: the period is closed
  on that day, so nothing can be posted into it afterwards.
"""
from __future__ import annotations

import datetime as dt
from functools import partial

from sqlalchemy import func, select

from ...kernel.schema import status_history
from ...kernel.tx import Tx
from ...sim import Day, actor
from ..ledger import journal_entries
from .schemas import NoteIn
from .service import approve_entry, close_period, post_entry, return_entry
from .tables import attachments
from .world import JournalReviewer


def _submitted_on(tx: Tx, entry_id: str) -> str | None:
    """The day the entry was last submitted (its status history)."""
    h = status_history
    return tx.conn.execute(select(func.max(h.c.on_date)).where(
        h.c.doc_type == "journal_entry", h.c.doc_id == entry_id, h.c.to_status == "submitted")).scalar()


@actor("approvers")
def journal_reviewer(day: Day) -> None:
    """Return unsupported submitted entries; approve (and post) supported ones."""
    cfg = day.world.section("journal_reviewer")
    if not cfg or not cfg.get("user"):
        return
    user, wait = cfg["user"], int(cfg.get("after_days", 1))
    require, post = bool(cfg.get("require_support", True)), bool(cfg.get("post", True))
    note = cfg.get("note") or JournalReviewer().note

    def waiting(tx: Tx) -> list[tuple[str, str | None, bool]]:
        rows = tx.all(select(journal_entries.c.id).where(journal_entries.c.status == "submitted",
                                                         journal_entries.c.source == "manual")
                      .order_by(journal_entries.c.id))
        return [(r["id"], _submitted_on(tx, r["id"]),
                 bool(tx.rows(attachments, doc_type="journal_entry", doc_id=r["id"]))) for r in rows]

    for entry_id, submitted, supported in day.look(waiting):
        if submitted is None or (dt.date.fromisoformat(submitted) + dt.timedelta(days=wait)).isoformat() > day.date:
            continue
        if require and not supported:
            day.act(user, "je.return", f"/journal-entries/{entry_id}/return", {"note": note},
                    partial(return_entry, entry_id=entry_id, body=NoteIn(note=note)))
            continue
        out = day.act(user, "je.approve", f"/journal-entries/{entry_id}/approve", None,
                      partial(approve_entry, entry_id=entry_id))
        if out is not None and post:
            day.act(user, "je.post", f"/journal-entries/{entry_id}/post", None, partial(post_entry, entry_id=entry_id))


@actor("managers")
def period_closer(day: Day) -> None:
    """Close the periods scheduled for today."""
    for close in day.world.section("period_closes", []) or []:
        if close.get("on") != day.date:
            continue
        period, note = close["period"], f"{close['period']} closed"
        day.act(close["user"], "period.close", f"/periods/{period}/close", {"note": note},
                partial(close_period, period_id=period, body=NoteIn(note=note)))
