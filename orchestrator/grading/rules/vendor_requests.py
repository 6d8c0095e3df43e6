"""`repeated_vendor_request`: a request the agent sent to a vendor about a purchase-order line
while a request of the same kind for that line was still open (planning handbooks: never
repeat a request; wait for the vendor's answer).

A request is open from the business day it was created until the business day the vendor
answered it (or it was withdrawn). The earlier request may be anyone's — a colleague's before
the episode, or the agent's own a moment before. Requests without a purchase order (disputes,
copy requests of an invoice) are not judged here.
"""
from __future__ import annotations

from typing import Any

from orchestrator.grading.audit import AuditContext, images
from orchestrator.grading.rules import Finding, rule

# --- ERP names used by this rule ---------------------------------------------------------------
REQUEST_OBJECT = "vendor_request"
LINE_KINDS = ("expedite", "defer", "cancel")
REQUESTS_SQL = f"""
SELECT id, kind, vendor_id, po_id, po_line, status, created_on, created_by, answered_on
FROM vendor_requests
WHERE po_id IS NOT NULL AND kind IN ({", ".join(f"'{k}'" for k in LINE_KINDS)})
ORDER BY id
"""


def _closed_on(row: dict[str, Any]) -> str | None:
    """The business day a request stopped being open (None while it is open)."""
    if row.get("answered_on"):
        return str(row["answered_on"])
    if row.get("status") not in (None, "open"):
        return str(row["created_on"])      # withdrawn: no longer waiting on the vendor
    return None


@rule("repeated_vendor_request")
def repeated_vendor_request(ctx: AuditContext, params: dict[str, Any]) -> list[Finding]:
    """Requests the agent created while one of the same kind for the same line was open."""
    if not ctx.has_table("vendor_requests"):
        raise LookupError("repeated_vendor_request: no vendor_requests table")
    rows = {str(r["id"]): r for r in ctx.query(REQUESTS_SQL)}
    created = [oid for ev in ctx.agent_commits() for otype, oid, before, after in images(ev)
               if otype == REQUEST_OBJECT and before is None and after is not None]
    out: list[Finding] = []
    for rid in dict.fromkeys(created):
        mine = rows.get(rid)
        if mine is None:
            continue
        for other in rows.values():
            if other["id"] == rid or other["kind"] != mine["kind"] or other["po_id"] != mine["po_id"]:
                continue
            if other["po_line"] is not None and mine["po_line"] is not None and other["po_line"] != mine["po_line"]:
                continue
            earlier = (str(other["created_on"]), str(other["id"])) < (str(mine["created_on"]), rid)
            closed = _closed_on(other)
            if earlier and (closed is None or closed > str(mine["created_on"])):
                out.append(Finding(
                    "repeated_vendor_request",
                    f"{rid} asks {mine['vendor_id']} to {mine['kind']} {mine['po_id']} line "
                    f"{mine['po_line'] or 'all'} while {other['id']} (same request, {other['created_on']}) "
                    f"was still open",
                    {"request": rid, "open_request": other["id"], "po_id": mine["po_id"], "kind": mine["kind"]}))
                break
    return out
