"""Ledger ties on the final database: the trial balance balances, control accounts equal subledgers.

The arithmetic is bb-erp's own (`erp_service.domains.ledger.trial_balance` / `control_ties`,
pure functions over a connection, with every domain's subledger registered when
`erp_service.domains` is imported), so the grader and the ERP's control-ties report can never
disagree. The grader runs them on a read-only connection to the frozen database.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.grading.projections import connect_ro


def _erp_ledger():
    import erp_service.domains  # noqa: F401  (registers every domain's subledger)
    from erp_service.domains import ledger

    return ledger


def ledger_ties(db_path: Path, as_of: str, accounts: list[str] | None) -> tuple[bool, str, dict[str, Any]]:
    """(passed, detail, data): trial balance at `as_of`, and ties of the named control keys.

    `accounts` are control keys (ap, ar, grni, inventory, ...); None means every control account.
    A named key without a control account or without a registered subledger fails the check.
    """
    from sqlalchemy import create_engine

    ledger = _erp_ledger()
    engine = create_engine("sqlite://", creator=lambda: connect_ro(db_path))
    try:
        with engine.connect() as conn:
            tb = ledger.trial_balance(conn, as_of)
            ties = ledger.control_ties(conn, as_of)
    finally:
        engine.dispose()
    by_key = {t["control"]: t for t in ties}
    wanted = list(accounts) if accounts is not None else sorted(by_key)
    problems = []
    if not tb["balanced"]:
        problems.append(f"trial balance off: debits {tb['total_debit']:.2f} vs credits {tb['total_credit']:.2f}")
    for key in wanted:
        t = by_key.get(key)
        if t is None:
            problems.append(f"{key}: no control account (known: {', '.join(sorted(by_key)) or 'none'})")
        elif t["subledger"] is None:
            problems.append(f"{key}: account {t['account']} has no subledger to tie to")
        elif not t["tied"]:
            problems.append(f"{key}: account {t['account']} {t['gl']:.2f} vs subledger {t['subledger']:.2f}")
    data = {"total_debit": tb["total_debit"], "total_credit": tb["total_credit"],
            "ties": {k: by_key[k] for k in wanted if k in by_key}}
    if problems:
        return False, "; ".join(problems), data
    return True, f"balanced ({tb['total_debit']:.2f}); ties hold: {', '.join(wanted) or 'none'}", data
