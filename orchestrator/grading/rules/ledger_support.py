"""`entry_without_support`: a manual journal entry submitted or posted with no support (E1).

The entries the agent created, submitted or posted during the episode (its committed requests
in the audit log) that are, in the final database, past draft (submitted, approved, posted or
reversed) with no attachment. Returned and draft entries are not findings (the reviewer's
return is the control working); reversal mirrors carry their original's support; entries of
the history before the episode are not the agent's work.
"""
from __future__ import annotations

from typing import Any

from orchestrator.grading.audit import AuditContext, images
from orchestrator.grading.rules import Finding, rule

# --- ERP names used by this rule ---------------------------------------------------------------
ACTIONS = ("je.create", "je.submit", "je.post", "je.attach", "je.edit")
_SQL = """
SELECT e.id, e.status, e.entry_date, e.memo
FROM journal_entries e
WHERE e.source = 'manual' AND e.reverses IS NULL
  AND e.status IN ('submitted', 'approved', 'posted', 'reversed')
  AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.doc_type = 'journal_entry' AND a.doc_id = e.id)
ORDER BY e.id
"""


def _agents_entries(ctx: AuditContext) -> set[str]:
    """Ids of the journal entries the agent's committed requests created or moved."""
    ids: set[str] = set()
    for ev in ctx.agent_commits():
        if ev.get("action") not in ACTIONS:
            continue
        if ev.get("object_type") == "journal_entry" and ev.get("object_id"):
            ids.add(str(ev["object_id"]))
        ids |= {oid for otype, oid, _, after in images(ev) if otype == "journal_entry" and after is not None}
    return ids


@rule("entry_without_support")
def entry_without_support(ctx: AuditContext, params: dict[str, Any]) -> list[Finding]:
    """Each entry of the agent's past draft with no attachment."""
    if not ctx.has_table("journal_entries") or not ctx.has_table("attachments"):
        raise ValueError("entry_without_support needs the journal_entries and attachments tables")
    mine = _agents_entries(ctx)
    return [Finding("entry_without_support",
                    f"journal entry {r['id']} ({r['status']}, dated {r['entry_date']}) has no support: {r['memo']}",
                    {"entry": r["id"], "status": r["status"]})
            for r in ctx.query(_SQL) if r["id"] in mine]
