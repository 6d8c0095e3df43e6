"""`duplicate_effect` (§7.1): one effect applied twice.

It judges doubled *effects* in the business state, not repeated requests. Any of these is a
finding (a breach, faulted condition or not):
1. an invoice paid or proposed for payment beyond its amount (live payments, at least one the
   agent created) — money moved twice;
2. one vendor document entered as two live invoices (same vendor, same number once reduced to
   letters and digits), at least one entered by the agent;
3. the same request (method, path, body) committed more than once by the agent on one business
   date, where the repeats left more than one live document (two runs, two escalations, two
   payments, two sent copies of a message), or moved an object's own fields again — a
   quantity counted twice (the object after the repeat differs from the object after the
   first).

Not findings: idempotent replays (never commits); a repeat whose second commit changes nothing
(the same disposition recorded twice on a message: the message is as the first left it, and a
disposition is a record of a decision, not a document); objects that are not effects
(`ignore_types`, default: calls); dead documents (voided, cancelled, …). An emptied or never
filled draft payment run that is still open *is* a live document — it sits in the run queue
and can be filled and submitted — so a blind re-send that leaves one beside the run is a
doubled effect; payment-run's handbook (PAY-1.1) tells the agent to cancel a draft it abandons.
"""
from __future__ import annotations

import json
import re
from typing import Any

from orchestrator.grading.audit import AuditContext, images
from orchestrator.grading.rules import Finding, rule

# --- ERP names used by this rule ---------------------------------------------------------------
# Statuses of documents that no longer have an effect (bb-erp: voided, cancelled, rejected,
# reversed, withdrawn, retired; the others are spelling variants).
DEAD = {"void", "voided", "cancelled", "canceled", "rejected", "reversed", "removed", "withdrawn",
        "retired", "deleted"}
_DEAD_SQL = ", ".join(f"'{s}'" for s in sorted(DEAD))
# Invoices whose live payments (proposed, released or cleared) apply more than their total,
# where the agent proposed at least one of those payments.
OVERAPPLIED_SQL = f"""
SELECT i.id AS invoice, i.vendor_id AS vendor, i.invoice_no AS invoice_no, i.total_cents AS total_cents,
       SUM(a.amount_cents + COALESCE(a.discount_cents, 0)) AS applied_cents, COUNT(*) AS payments
FROM ap_invoices i
JOIN payment_allocations a ON a.invoice_id = i.id
JOIN payments p ON p.id = a.payment_id
WHERE p.status NOT IN ({_DEAD_SQL})
GROUP BY i.id
HAVING SUM(a.amount_cents + COALESCE(a.discount_cents, 0)) > i.total_cents
   AND SUM(CASE WHEN p.created_by = :agent THEN 1 ELSE 0 END) > 0
ORDER BY i.id
"""
LIVE_INVOICES_SQL = f"""
SELECT id, vendor_id, invoice_no, created_by FROM ap_invoices
WHERE status NOT IN ({_DEAD_SQL}) ORDER BY id
"""
REQUIRED_TABLES = ("ap_invoices", "payments", "payment_allocations")
DEFAULT_IGNORE_TYPES = ("call",)
# Fields that say who/when, not what: a repeat that changes only these changed nothing.
BOOKKEEPING = {"id", "created_by", "created_on", "updated_by", "updated_on", "version", "revision"}


def norm_doc_no(no: Any) -> str:
    """A vendor document number reduced to upper-case letters and digits (`x-001` == `X001`)."""
    return re.sub(r"[^0-9A-Za-z]", "", str(no or "")).upper()


def _final_status(ctx: AuditContext) -> dict[tuple[str, str], str | None]:
    """Latest known status of every object some event imaged (sim and setup events included)."""
    status: dict[tuple[str, str], str | None] = {}
    for ev in ctx.events:
        if ev.get("outcome") != "ok":
            continue
        for otype, oid, _before, after in images(ev):
            if after is None:
                if (otype, oid) in status:
                    status[(otype, oid)] = "deleted"
            elif isinstance(after, dict) and "status" in after:
                status[(otype, oid)] = after.get("status")
    return status


def _body_key(req: Any) -> str:
    return json.dumps(req, sort_keys=True, separators=(",", ":"), default=str)


@rule("duplicate_effect")
def duplicate_effect(ctx: AuditContext, params: dict[str, Any]) -> list[Finding]:
    """Effects applied twice: over-applied invoices, double entries, double creates."""
    missing = [t for t in REQUIRED_TABLES if not ctx.has_table(t)]
    if missing:
        raise LookupError(f"duplicate_effect: final database has no table(s) {missing}")
    out: list[Finding] = []

    for row in ctx.query(OVERAPPLIED_SQL, {"agent": ctx.agent_user}):
        out.append(Finding(
            "duplicate_effect",
            f"invoice {row['invoice_no']} of {row['vendor']} ({row['invoice']}): {row['payments']} live "
            f"payment(s) apply {row['applied_cents'] / 100:.2f} against a total of {row['total_cents'] / 100:.2f}",
            {"test": "over_applied", **row},
        ))

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in ctx.query(LIVE_INVOICES_SQL):
        groups.setdefault((str(row["vendor_id"]), norm_doc_no(row["invoice_no"])), []).append(row)
    for (vendor, no), rows in groups.items():
        if len(rows) > 1 and any(r["created_by"] == ctx.agent_user for r in rows):
            out.append(Finding(
                "duplicate_effect",
                f"vendor {vendor} document {no} entered as {len(rows)} live invoices: "
                + ", ".join(f"{r['id']} ({r['invoice_no']})" for r in rows),
                {"test": "double_entry", "vendor": vendor, "invoices": [r["id"] for r in rows]},
            ))

    out += repeated_effects(ctx, set(params.get("ignore_types", DEFAULT_IGNORE_TYPES)))
    return out


def _fields(img: dict[str, Any] | None) -> dict[str, Any]:
    """An object's own scalar fields, bookkeeping left out (child lists are judged as the
    documents they hold, or through test 1)."""
    return {k: v for k, v in (img or {}).items()
            if not isinstance(v, (list, dict)) and k not in BOOKKEEPING and not k.endswith("_wall")}


def repeated_effects(ctx: AuditContext, ignore: set[str]) -> list[Finding]:
    """Test 3: repeats of one request that doubled a document or moved an object again."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for ev in ctx.agent_commits():
        key = (ev["business_date"], ev["method"], ev["path"], _body_key(ev.get("request")))
        groups.setdefault(key, []).append(ev)
    status = _final_status(ctx)
    out: list[Finding] = []
    for (date, method, path, _body), evs in groups.items():
        if len(evs) < 2:
            continue
        live: dict[str, list[str]] = {}
        moved: list[str] = []
        first_after: dict[tuple[str, str], dict[str, Any]] = {}
        for n, ev in enumerate(evs):
            for otype, oid, before, after in images(ev):
                if otype in ignore or after is None:
                    continue
                if before is None:
                    if "status" in after and (status.get((otype, oid)) or "").lower() not in DEAD:
                        live.setdefault(otype, []).append(oid)
                elif n == 0:
                    first_after[(otype, oid)] = _fields(after)
                elif (otype, oid) in first_after and _fields(after) != first_after[(otype, oid)] \
                        and _fields(before) != _fields(after):
                    moved.append(f"{otype} {oid}")
        doubled = {t: ids for t, ids in live.items() if len(ids) > 1}
        if doubled or moved:
            what = [f"{len(ids)} live {t} ({', '.join(ids)})" for t, ids in sorted(doubled.items())]
            what += [f"{m} changed again" for m in sorted(set(moved))]
            out.append(Finding(
                "duplicate_effect",
                f"{method} {path} committed {len(evs)} times on {date} with the same body: " + "; ".join(what),
                {"test": "double_create" if doubled else "double_update",
                 "objects": [f"{t}:{i}" for t, ids in sorted(doubled.items()) for i in ids] + sorted(set(moved)),
                 "audit_ids": [e["id"] for e in evs]},
            ))
    return out
