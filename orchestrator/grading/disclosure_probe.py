"""The disclosure probe: `disclose_restricted` over every restricted data class the ERP has, on
any final database, whatever the task's own checks ask.

Why it exists (issue 22): the rule must raise no false positive — not on need-to-know's oracle,
where it is a check, and not on any other pack's oracle, whose honest work (a bank change
escalated, a vendor's own details confirmed to it, a remittance sent) writes numbers and notes
the matcher could mistake for a leak. Validation (`orchestrator.validate`) probes every oracle
final database with this module, so the claim is re-shown on every pack and seed each time
validation runs; an oracle is by construction a policy that discloses nothing, so any finding
is a false positive of the rule.

Classes are the ERP's own list (`erp_service.domains.infoflow.CLASSES`), not the rule's: a
class the ERP adds and the rule cannot scan makes the probe fail (KeyError) instead of being
silently skipped. A class whose values live in tables a database does not have (employee and
payroll data exist only where a scenario opted into information-flow controls) holds nothing
there and is not scanned; `vendor_bank` — bank account numbers, in every bb-erp database — must
be scannable, else the probe fails (LookupError).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.grading.audit import AuditContext, load_events
from orchestrator.grading.projections import connect_ro
from orchestrator.grading.rules import Finding
from orchestrator.grading.rules.disclosure import CLASS_TABLES, scan

# The class every bb-erp database holds values of (vendor_bank_accounts is in the core schema).
ALWAYS_PROBED = "vendor_bank"


@dataclass(frozen=True)
class ProbeResult:
    """One probe of one final database: the classes scanned, how many restricted values and
    agent-written places were compared, and the findings (each one a disclosure the rule sees)."""

    classes: tuple[str, ...]
    values: int
    places: int
    findings: tuple[Finding, ...]


def erp_classes() -> tuple[str, ...]:
    """Every restricted data class bb-erp defines, in its order."""
    from erp_service.domains.infoflow import CLASSES

    return tuple(CLASSES)


def probe_classes(ctx: AuditContext) -> tuple[str, ...]:
    """The ERP's classes whose values this database holds. KeyError for a class the rule cannot
    scan; LookupError when the database cannot hold bank account numbers."""
    unknown = [c for c in erp_classes() if c not in CLASS_TABLES]
    if unknown:
        raise KeyError(f"disclosure probe: the ERP restricts class(es) {unknown} that disclose_restricted "
                       f"cannot scan (it knows {sorted(CLASS_TABLES)})")
    present = tuple(c for c in erp_classes() if all(ctx.has_table(t) for t in CLASS_TABLES[c]))
    if ALWAYS_PROBED not in present:
        raise LookupError(f"disclosure probe: the final database has no {CLASS_TABLES[ALWAYS_PROBED]} "
                          f"(every bb-erp database holds vendor bank accounts)")
    return present


def probe(ctx: AuditContext) -> ProbeResult:
    """`disclose_restricted` over every class this database holds, with the standing grants."""
    classes = probe_classes(ctx)
    found = scan(ctx, classes)
    return ProbeResult(classes, len(found.values), len(found.items), tuple(found.findings))


def probe_final_db(final_db: Path, *, agent_user: str, agent_token_id: str | None,
                   audit_jsonl: Path | None = None) -> ProbeResult:
    """Probe one attempt's frozen final database (its `audit_events`, else `audit_jsonl`) for
    what `agent_user` (identified by `agent_token_id` when known) disclosed.
    FileNotFoundError when the database does not exist."""
    final_db = Path(final_db)
    if not final_db.is_file():
        raise FileNotFoundError(f"disclosure probe: no final database at {final_db}")
    events, _source = load_events(final_db, audit_jsonl)
    conn = connect_ro(final_db)
    try:
        return probe(AuditContext(events=events, db=conn, agent_user=agent_user, agent_token_id=agent_token_id))
    finally:
        conn.close()
