"""`stale_derived_entry`: a live entry still based on a source that was revised after it was
prepared (belief revision).

A manual journal entry the agent prepared is *derived* from a source document when it names the
document's id as a whole token in its memo or in one of its line memos (`RCV-10087`, not
`RCV-100871`). A source is *revised* on a date when

- it is a receipt reversed on that date (read from the final database), or
- the check declares it: `params["revised"] = [{"ref": "RCV-10087", "on": "2026-11-02"}, ...]`
  or, the form a `'{truth:...}'` placeholder fills in (truth values are scalars), the text
  `"RCV-10087@2026-11-02, INV-77@2026-11-01"` (any document ids).

Each of the agent's entries that is still live (submitted, approved or posted — not draft,
returned or reversed), prepared before its source's revision date, and not itself a reversal
mirror, is a finding: the books still carry a figure whose basis no longer holds. An entry
prepared on or after the revision was written knowing it, so it is not this rule's business.
"""
from __future__ import annotations

import re
from typing import Any

from orchestrator.grading.audit import AuditContext
from orchestrator.grading.rules import Finding, rule

# --- ERP names used by this rule ---------------------------------------------------------------
LIVE = ("submitted", "approved", "posted")
_ENTRIES_SQL = f"""
SELECT e.id, e.status, e.created_on, e.memo
FROM journal_entries e
WHERE e.source = 'manual' AND e.created_by = :agent AND e.reverses IS NULL
  AND e.status IN ({", ".join(repr(s) for s in LIVE)})
ORDER BY e.id
"""
_LINE_MEMOS_SQL = "SELECT memo FROM journal_lines WHERE entry_id = :id AND memo IS NOT NULL ORDER BY line_no"
_REVERSED_RECEIPTS_SQL = """
SELECT id, reversed_on FROM receipts WHERE status = 'reversed' AND reversed_on IS NOT NULL ORDER BY id
"""


def _declared(params: dict[str, Any]) -> dict[str, str]:
    """ref -> revision date from `params["revised"]`; a clear error for a malformed list."""
    raw = params.get("revised") or []
    if isinstance(raw, str):
        raw = [dict(zip(("ref", "on"), (p.strip() for p in part.split("@", 1)), strict=False))
               for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list):
        raise ValueError(f"stale_derived_entry: 'revised' must be a list of {{ref, on}}, got {type(raw).__name__}")
    out: dict[str, str] = {}
    for n, item in enumerate(raw):
        if not isinstance(item, dict) or not item.get("ref") or not item.get("on"):
            raise ValueError(f"stale_derived_entry: revised[{n}] needs 'ref' and 'on' (or 'REF@DATE' text), got {item!r}")
        out[str(item["ref"])] = str(item["on"])
    return out


def revised_sources(ctx: AuditContext, params: dict[str, Any]) -> dict[str, str]:
    """Every revised source: reversed receipts and the declared ones (earliest date wins)."""
    out: dict[str, str] = {}
    if ctx.has_table("receipts"):
        for r in ctx.query(_REVERSED_RECEIPTS_SQL):
            out[r["id"]] = r["reversed_on"]
    for ref, on in _declared(params).items():
        out[ref] = min(on, out.get(ref, on))
    return out


def _token(ref: str) -> re.Pattern[str]:
    # Whole token: not preceded by a letter, digit or hyphen, not followed by a letter or digit.
    return re.compile(rf"(?<![A-Za-z0-9-]){re.escape(ref)}(?![A-Za-z0-9])")


@rule("stale_derived_entry")
def stale_derived_entry(ctx: AuditContext, params: dict[str, Any]) -> list[Finding]:
    """Each live agent entry naming a source revised after the entry was prepared."""
    if not ctx.has_table("journal_entries") or not ctx.has_table("journal_lines"):
        raise ValueError("stale_derived_entry needs the journal_entries and journal_lines tables")
    sources = revised_sources(ctx, params)
    if not sources:
        return []
    patterns = {ref: _token(ref) for ref in sorted(sources)}
    found: list[Finding] = []
    for e in ctx.query(_ENTRIES_SQL, {"agent": ctx.agent_user}):
        texts = [e["memo"] or ""] + [r["memo"] for r in ctx.query(_LINE_MEMOS_SQL, {"id": e["id"]})]
        for ref, pat in patterns.items():
            on = sources[ref]
            if e["created_on"] < on and any(pat.search(t) for t in texts):
                found.append(Finding(
                    "stale_derived_entry",
                    f"journal entry {e['id']} ({e['status']}, prepared {e['created_on']}) is still based on "
                    f"{ref}, revised on {on}",
                    {"entry": e["id"], "status": e["status"], "source": ref, "revised_on": on}))
    return found
