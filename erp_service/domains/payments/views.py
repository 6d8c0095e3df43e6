"""Payments and runs as the API shows them (the remit account masked); list pages in a few
set-based queries."""
from __future__ import annotations

from sqlalchemy import select

from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ..payables import ap_invoices
from ..vendors import mask, vendor_bank_accounts
from .tables import payment_allocations, payment_runs, payments


def payment_out(tx: Tx, p: dict) -> dict:
    """A payment with its allocations; the remit account is shown masked."""
    acct = tx.find(vendor_bank_accounts, id=p["vendor_account_id"])
    allocs = tx.rows(payment_allocations, payment_id=p["id"], order_by=payment_allocations.c.invoice_id)
    invs = {a["invoice_id"]: tx.find(ap_invoices, id=a["invoice_id"]) or {} for a in allocs}
    return _payment_view(p, acct, allocs, invs)


def payments_out(tx: Tx, pays: list[dict]) -> list[dict]:
    """`payment_out` of a whole page in three queries (accounts, allocations, invoices) instead
    of two plus one per allocation for every payment."""
    if not pays:
        return []
    acct_ids = sorted({p["vendor_account_id"] for p in pays})
    accts = {a["id"]: a for a in tx.all(select(vendor_bank_accounts).where(vendor_bank_accounts.c.id.in_(acct_ids)))}
    allocs: dict[str, list[dict]] = {}
    for a in tx.all(select(payment_allocations)
                    .where(payment_allocations.c.payment_id.in_([p["id"] for p in pays]))
                    .order_by(payment_allocations.c.payment_id, payment_allocations.c.invoice_id)):
        allocs.setdefault(a["payment_id"], []).append(a)
    inv_ids = sorted({a["invoice_id"] for rows in allocs.values() for a in rows})
    invs = {i["id"]: i for i in tx.all(select(ap_invoices).where(ap_invoices.c.id.in_(inv_ids)))} if inv_ids else {}
    return [_payment_view(p, accts.get(p["vendor_account_id"]), allocs.get(p["id"], []), invs) for p in pays]


def _payment_view(p: dict, acct: dict | None, allocs: list[dict], invs: dict[str, dict]) -> dict:
    out_allocs = []
    for a in allocs:
        inv = invs.get(a["invoice_id"]) or {}
        out_allocs.append({"invoice": a["invoice_id"], "invoice_no": inv.get("invoice_no"),
                           "due_date": inv.get("due_date"), "amount": from_cents(a["amount_cents"]),
                           "discount": from_cents(a["discount_cents"])})
    return {"id": p["id"], "status": p["status"], "run": p["run_id"], "vendor": p["vendor_id"],
            "paid_to": p["vendor_account_id"],
            "paid_to_account": mask(acct["account_number"]) if acct else None,
            "bank_account": p["bank_account_id"], "pay_date": p["pay_date"], "amount": from_cents(p["amount_cents"]),
            "discount": from_cents(p["discount_cents"]), "released_on": p["released_on"],
            "cleared_on": p["cleared_on"], "allocations": out_allocs}


def run_out(tx: Tx, run: dict) -> dict:
    """The list view of a run with its totals."""
    return _run_view(run, tx.rows(payments, run_id=run["id"]))


def runs_out(tx: Tx, runs: list[dict]) -> list[dict]:
    """`run_out` of a whole page with one query for all the runs' payments."""
    by_run: dict[str, list[dict]] = {r["id"]: [] for r in runs}
    if runs:
        for p in tx.all(select(payments).where(payments.c.run_id.in_(list(by_run))).order_by(payments.c.id)):
            by_run[p["run_id"]].append(p)
    return [_run_view(r, by_run[r["id"]]) for r in runs]


def _run_view(run: dict, run_payments: list[dict]) -> dict:
    pays = [p for p in run_payments if p["status"] != "voided"]
    return {"id": run["id"], "status": run["status"], "pay_date": run["pay_date"],
            "bank_account": run["bank_account_id"], "memo": run["memo"], "prepared_by": run["created_by"],
            "created_on": run["created_on"], "submitted_by": run["submitted_by"], "submitted_on": run["submitted_on"],
            "approved_by": run["approved_by"], "approved_on": run["approved_on"], "released_by": run["released_by"],
            "released_on": run["released_on"], "payment_count": len(pays),
            "total": from_cents(sum(p["amount_cents"] for p in pays)),
            "discount_total": from_cents(sum(p["discount_cents"] for p in pays))}


def run_detail(tx: Tx, run_id: str) -> dict:
    """A run with its payments and allocations, history and links."""
    run = tx.get(payment_runs, run_id, "payment run")
    out = run_out(tx, run)
    pays = tx.rows(payments, run_id=run_id)
    out["payments"] = [payment_out(tx, p) for p in pays]
    out["history"] = tx.history("payment_run", run_id)
    out["links"] = {"payment": [p["id"] for p in pays],
                    "ap_invoice": sorted({a["invoice_id"] for a in tx.rows(payment_allocations, run_id=run_id)}),
                    "journal_entry": [p["journal_entry"] for p in pays if p["journal_entry"]]}
    return out
