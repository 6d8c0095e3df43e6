"""Payment runs and payments.

A run is built as a draft (invoices added, each one payment per vendor with allocations per
invoice), submitted, approved by someone other than its preparer within their payment_run
limit, and released. A submitted or approved run can always be returned to draft (so a run
whose release is refused is never stuck), and a draft can be cancelled.

Hard controls, checked when an invoice is added and again at submit, approve and release:
the invoice is approved and not on hold, the vendor is active, the vendor's remit account is
verified and is the account the payment was proposed to, the amount does not exceed what is
open, and an invoice is in at most one live proposal. Release posts, per payment: AP debit per
invoice (cash + discount), cash credit, purchase-discount credit. The bank clears released
payments (see `banking`).
"""
from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from sqlalchemy import Column, Integer, String, Table, Text, delete, func, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..kernel.errors import invalid, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Amount, from_cents, to_cents
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from . import ledger
from .ledger import Line
from .org import approval_limit_cents
from .payables import HistoryOut

payment_runs = Table(
    "payment_runs", metadata,
    *doc_columns(),                                   # draft|submitted|approved|released|cancelled
    Column("pay_date", String, nullable=False),
    Column("bank_account_id", String, nullable=False),   # company bank account (bank_accounts.id)
    Column("memo", Text),
    Column("submitted_by", String),
    Column("submitted_on", String),
    Column("approved_by", String),
    Column("approved_on", String),
    Column("released_by", String),
    Column("released_on", String),
)

payments = Table(
    "payments", metadata,
    *doc_columns(),                                   # proposed|released|cleared|voided
    Column("run_id", String, nullable=False, index=True),
    Column("vendor_id", String, nullable=False, index=True),
    Column("vendor_account_id", String, nullable=False),  # the verified remit account at proposal
    Column("bank_account_id", String, nullable=False),
    Column("pay_date", String, nullable=False),
    Column("amount_cents", Integer, nullable=False, default=0),   # cash
    Column("discount_cents", Integer, nullable=False, default=0),
    Column("released_on", String),
    Column("cleared_on", String),
    Column("journal_entry", String),
)

payment_allocations = Table(
    "payment_allocations", metadata,
    Column("payment_id", String, primary_key=True),
    Column("invoice_id", String, primary_key=True, index=True),
    Column("run_id", String, nullable=False, index=True),
    Column("amount_cents", Integer, nullable=False),      # cash applied
    Column("discount_cents", Integer, nullable=False, default=0),
)

register_object("payment_run", payment_runs, [(payments, "run_id"), (payment_allocations, "run_id")])
register_object("payment", payments, [(payment_allocations, "payment_id")])

LIVE_RUN = ("draft", "submitted", "approved")


# Views --------------------------------------------------------------------------------------------

def payment_out(tx: Tx, p: dict) -> dict:
    """A payment with its allocations; the remit account is shown masked."""
    from .vendors import vendor_bank_accounts
    acct = tx.find(vendor_bank_accounts, id=p["vendor_account_id"])
    allocs = tx.rows(payment_allocations, payment_id=p["id"], order_by=payment_allocations.c.invoice_id)
    from .payables import ap_invoices
    invs = {a["invoice_id"]: tx.find(ap_invoices, id=a["invoice_id"]) or {} for a in allocs}
    return _payment_view(p, acct, allocs, invs)


def payments_out(tx: Tx, pays: list[dict]) -> list[dict]:
    """`payment_out` of a whole page in three queries (accounts, allocations, invoices) instead
    of two plus one per allocation for every payment."""
    from .payables import ap_invoices
    from .vendors import vendor_bank_accounts
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
    from .vendors import mask
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


# Request models -----------------------------------------------------------------------------------

class RunIn(In):
    pay_date: dt.date
    bank_account: str = Field("OPER", description="Company bank account id (GET /bank-accounts).")
    memo: str | None = Field(None, max_length=2000)


class AddInvoiceIn(In):
    invoice: str
    amount: Amount | None = Field(None, description="Cash to pay; default: everything open (less the discount taken).")
    take_discount: bool | None = Field(None, description="Default: true when the discount date is still open on the pay date.")


class NoteIn(In):
    note: str | None = Field(None, max_length=2000)


# Checks -------------------------------------------------------------------------------------------

def check_payable(tx: Tx, invoice_id: str, vendor_account_id: str | None = None) -> dict:
    """The hard controls on paying an invoice; returns the invoice. With `vendor_account_id`,
    also requires the vendor's verified remit account to still be that account."""
    from .payables import ap_invoices
    from .vendors import vendors, verified_remit_account
    inv = tx.get(ap_invoices, invoice_id, "AP invoice")
    if inv["status"] == "on_hold":
        raise refused("on_hold", f"Invoice {invoice_id} is on hold and cannot be paid.", invoice=invoice_id)
    if inv["status"] != "approved":
        raise refused("not_approved", f"Invoice {invoice_id} is {inv['status']}, not approved for payment.",
                      invoice=invoice_id, status=inv["status"])
    v = tx.get(vendors, inv["vendor_id"], "vendor")
    if v["status"] != "active":
        raise refused("vendor_inactive", f"Vendor {v['id']} is inactive; it cannot be paid.", vendor=v["id"])
    remit = verified_remit_account(tx, v["id"])
    if remit is None:
        raise refused("no_verified_account", f"Vendor {v['id']} has no verified remit bank account.", vendor=v["id"])
    if vendor_account_id is not None and remit["id"] != vendor_account_id:
        raise refused("account_changed", f"Vendor {v['id']}'s remit account changed since the payment was proposed "
                                         f"(was {vendor_account_id}, now {remit['id']}); return the run and re-propose.",
                      vendor=v["id"])
    return inv


def _recheck(tx: Tx, run_id: str) -> list[dict]:
    """Re-apply the hard controls to every proposed payment of a run; returns the payments."""
    from .payables import settled_cents
    pays = tx.rows(payments, run_id=run_id, status="proposed")
    if not pays:
        raise refused("empty_run", f"Payment run {run_id} has no payments.")
    for p in pays:
        for a in tx.rows(payment_allocations, payment_id=p["id"]):
            inv = check_payable(tx, a["invoice_id"], p["vendor_account_id"])
            left = inv["total_cents"] - settled_cents(tx, inv["id"])
            if a["amount_cents"] + a["discount_cents"] > left:
                raise refused("exceeds_open", f"Invoice {inv['id']} has only {from_cents(left):.2f} open.",
                              invoice=inv["id"])
    return pays


def _bank_gl_account(tx: Tx, bank_account_id: str) -> str:
    from .banking import bank_accounts
    row = tx.find(bank_accounts, id=bank_account_id)
    if row is None:
        raise invalid(f"Bank account {bank_account_id} does not exist (see GET /bank-accounts).")
    if row["status"] != "active":
        raise refused("bank_account_inactive", f"Bank account {bank_account_id} is not active.")
    return row["gl_account_id"]


# Service functions --------------------------------------------------------------------------------

def create_run(tx: Tx, body: RunIn) -> dict:
    """Start a draft payment run."""
    _bank_gl_account(tx, body.bank_account)
    if body.pay_date.isoformat() < tx.business_date:
        raise invalid(f"pay_date {body.pay_date} is in the past (today is {tx.business_date}).")
    row = tx.create_doc("payment_run", payment_runs, "PR", "draft", pay_date=body.pay_date.isoformat(),
                        bank_account_id=body.bank_account, memo=body.memo)
    return run_detail(tx, row["id"])


def _refresh_payment(tx: Tx, payment_id: str) -> None:
    cash, disc = tx.conn.execute(select(func.coalesce(func.sum(payment_allocations.c.amount_cents), 0),
                                        func.coalesce(func.sum(payment_allocations.c.discount_cents), 0))
                                 .where(payment_allocations.c.payment_id == payment_id)).one()
    tx.update(payments, payment_id, amount_cents=int(cash), discount_cents=int(disc))


def add_invoice(tx: Tx, run_id: str, body: AddInvoiceIn) -> dict:
    """Propose paying an invoice in a draft run (one payment per vendor per run)."""
    from .payables import settled_cents
    from .vendors import verified_remit_account
    run = tx.get(payment_runs, run_id, "payment run")
    if run["status"] != "draft":
        raise refused("bad_status", f"Payment run {run_id} is {run['status']}; invoices are added only to a draft.",
                      status=run["status"])
    inv = check_payable(tx, body.invoice)
    live = tx.one(select(payments.c.id, payments.c.run_id)
                  .select_from(payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id))
                  .where(payment_allocations.c.invoice_id == inv["id"], payments.c.status == "proposed"))
    if live:
        raise refused("already_proposed", f"Invoice {inv['id']} is already proposed in payment run {live['run_id']}.",
                      run=live["run_id"])
    settled = settled_cents(tx, inv["id"])
    left = inv["total_cents"] - settled
    if left <= 0:
        raise refused("exceeds_open", f"Invoice {inv['id']} has nothing open to pay.")
    available = (inv["discount_cents"] > 0 and inv["discount_date"] is not None
                 and run["pay_date"] <= inv["discount_date"] and settled == 0)
    take = available if body.take_discount is None else body.take_discount
    if take and not available:
        raise refused("discount_not_available",
                      f"Invoice {inv['id']}'s discount is not available on {run['pay_date']} "
                      f"(discount date {inv['discount_date'] or 'none'}).")
    discount = inv["discount_cents"] if take else 0
    if body.amount is None:
        amount = left - discount
    else:
        amount = to_cents(body.amount)
        if amount <= 0:
            raise invalid("amount must be positive.")
        if take and amount != left - discount:
            raise invalid(f"A discount is taken only with payment in full: pay {from_cents(left - discount):.2f} "
                          "or set take_discount false.")
        if amount > left - discount:
            raise refused("exceeds_open", f"Invoice {inv['id']} has only {from_cents(left):.2f} open.")
    remit = verified_remit_account(tx, inv["vendor_id"])
    tx.touch("payment_run", run_id)
    pay = tx.find(payments, run_id=run_id, vendor_id=inv["vendor_id"], status="proposed")
    if pay is None:
        pay = tx.create_doc("payment", payments, "PAY", "proposed", run_id=run_id, vendor_id=inv["vendor_id"],
                            vendor_account_id=remit["id"], bank_account_id=run["bank_account_id"],
                            pay_date=run["pay_date"], amount_cents=0, discount_cents=0)
    tx.insert(payment_allocations, payment_id=pay["id"], invoice_id=inv["id"], run_id=run_id, amount_cents=amount,
              discount_cents=discount)
    _refresh_payment(tx, pay["id"])
    tx.primary = ("payment_run", run_id)
    return run_detail(tx, run_id)


def remove_invoice(tx: Tx, run_id: str, invoice_id: str) -> dict:
    """Take an invoice out of a draft run (its payment is voided when it empties)."""
    run = tx.get(payment_runs, run_id, "payment run")
    if run["status"] != "draft":
        raise refused("bad_status", f"Payment run {run_id} is {run['status']}; invoices are removed only from a draft "
                                    "(return it to draft first).", status=run["status"])
    alloc = tx.one(select(payment_allocations)
                   .select_from(payment_allocations.join(payments, payments.c.id == payment_allocations.c.payment_id))
                   .where(payment_allocations.c.run_id == run_id, payment_allocations.c.invoice_id == invoice_id,
                          payments.c.status == "proposed"))
    if alloc is None:
        raise refused("not_in_run", f"Invoice {invoice_id} is not proposed in payment run {run_id}.")
    tx.touch("payment_run", run_id)
    tx.conn.execute(delete(payment_allocations).where(payment_allocations.c.payment_id == alloc["payment_id"],
                                                      payment_allocations.c.invoice_id == invoice_id))
    _refresh_payment(tx, alloc["payment_id"])
    if tx.count(payment_allocations, payment_id=alloc["payment_id"]) == 0:
        tx.set_status("payment", payments, alloc["payment_id"], "voided", f"{invoice_id} removed from run")
    tx.primary = ("payment_run", run_id)
    return run_detail(tx, run_id)


def submit_run(tx: Tx, run_id: str) -> dict:
    """Submit a draft run for approval (re-checks every payment)."""
    run = tx.get(payment_runs, run_id, "payment run")
    if run["status"] != "draft":
        raise refused("bad_status", f"Payment run {run_id} is {run['status']}; only a draft can be submitted.",
                      status=run["status"])
    _recheck(tx, run_id)
    tx.set_status("payment_run", payment_runs, run_id, "submitted", "submitted", allowed_from=["draft"],
                  submitted_by=tx.actor.user_id, submitted_on=tx.business_date)
    return run_detail(tx, run_id)


def run_total_cents(tx: Tx, run_id: str) -> int:
    """Cash total of a run's live payments."""
    return int(tx.scalar(select(func.coalesce(func.sum(payments.c.amount_cents), 0))
                         .where(payments.c.run_id == run_id, payments.c.status != "voided")) or 0)


def approve_run(tx: Tx, run_id: str) -> dict:
    """Approve a submitted run: not by its preparer or submitter, within the payment_run limit."""
    run = tx.get(payment_runs, run_id, "payment run")
    if run["status"] != "submitted":
        raise refused("bad_status", f"Payment run {run_id} is {run['status']}; only a submitted run can be approved.",
                      status=run["status"])
    if tx.actor.user_id in (run["created_by"], run["submitted_by"]):
        raise refused("preparer_cannot_approve", f"You prepared payment run {run_id}; someone else must approve it.")
    total = run_total_cents(tx, run_id)
    limit = approval_limit_cents(tx, tx.actor.user_id, "payment_run")
    if total > limit:
        raise refused("over_limit", f"Payment run {run_id} totals {from_cents(total):.2f}, above your payment_run "
                                    f"approval limit of {from_cents(limit):.2f}.")
    _recheck(tx, run_id)
    tx.set_status("payment_run", payment_runs, run_id, "approved", "approved", allowed_from=["submitted"],
                  approved_by=tx.actor.user_id, approved_on=tx.business_date)
    return run_detail(tx, run_id)


def return_run(tx: Tx, run_id: str, body: NoteIn | None) -> dict:
    """Send a submitted or approved run back to draft (its approval is cleared)."""
    tx.set_status("payment_run", payment_runs, run_id, "draft", (body.note if body else None) or "returned",
                  allowed_from=["submitted", "approved"], approved_by=None, approved_on=None)
    return run_detail(tx, run_id)


def cancel_run(tx: Tx, run_id: str, body: NoteIn | None) -> dict:
    """Cancel a draft run; its proposed payments are voided."""
    tx.set_status("payment_run", payment_runs, run_id, "cancelled", (body.note if body else None) or "cancelled",
                  allowed_from=["draft"])
    for p in tx.rows(payments, run_id=run_id, status="proposed"):
        tx.set_status("payment", payments, p["id"], "voided", "run cancelled")
    return run_detail(tx, run_id)


def release_run(tx: Tx, run_id: str) -> dict:
    """Release an approved run: re-check, post each payment, mark fully settled invoices paid."""
    from .payables import ap_invoices, settled_cents
    run = tx.get(payment_runs, run_id, "payment run")
    if run["status"] != "approved":
        raise refused("bad_status", f"Payment run {run_id} is {run['status']}; only an approved run can be released.",
                      status=run["status"])
    pays = _recheck(tx, run_id)
    cash_account = _bank_gl_account(tx, run["bank_account_id"])
    tx.set_status("payment_run", payment_runs, run_id, "released", "released", allowed_from=["approved"],
                  released_by=tx.actor.user_id, released_on=tx.business_date)
    for p in pays:
        allocs = tx.rows(payment_allocations, payment_id=p["id"])
        lines = [Line("rule:ap", a["amount_cents"] + a["discount_cents"], f"{p['id']} pays {a['invoice_id']}",
                      "vendor", p["vendor_id"], a["invoice_id"]) for a in allocs]
        lines.append(Line(cash_account, -p["amount_cents"], f"{p['id']} to {p['vendor_id']}", "vendor", p["vendor_id"],
                          p["id"]))
        lines.append(Line("rule:purchase_discounts", -p["discount_cents"], f"{p['id']} discounts taken", "vendor",
                          p["vendor_id"], p["id"]))
        je = ledger.post(tx, source="payment", source_ref=p["id"], memo=f"Payment {p['id']} run {run_id}", lines=lines)
        tx.set_status("payment", payments, p["id"], "released", f"run {run_id} released", released_on=tx.business_date,
                      journal_entry=je)
        for a in allocs:
            inv = tx.get(ap_invoices, a["invoice_id"])
            if inv["total_cents"] - settled_cents(tx, inv["id"]) <= 0:
                tx.set_status("ap_invoice", ap_invoices, inv["id"], "paid", f"paid by {p['id']}",
                              allowed_from=["approved"])
    tx.primary = ("payment_run", run_id)
    return run_detail(tx, run_id)


# Response models & routes ---------------------------------------------------------------------------

class AllocationOut(BaseModel):
    invoice: str
    invoice_no: str | None = None
    due_date: str | None = None
    amount: float
    discount: float


class PaymentOut(BaseModel):
    id: str
    status: str
    run: str
    vendor: str
    paid_to: str
    paid_to_account: str | None = None
    bank_account: str
    pay_date: str
    amount: float
    discount: float
    released_on: str | None = None
    cleared_on: str | None = None
    allocations: list[AllocationOut]


class RunOut(BaseModel):
    id: str
    status: str
    pay_date: str
    bank_account: str
    memo: str | None = None
    prepared_by: str | None = None
    created_on: str
    submitted_by: str | None = None
    submitted_on: str | None = None
    approved_by: str | None = None
    approved_on: str | None = None
    released_by: str | None = None
    released_on: str | None = None
    payment_count: int
    total: float
    discount_total: float


class RunDetail(RunOut):
    payments: list[PaymentOut]
    history: list[HistoryOut]
    links: dict[str, list[str]]


router = APIRouter(tags=["payments"])


@router.get("/payment-runs", response_model=Envelope[Page[RunOut]], summary="List payment runs (filter: status)")
def list_runs(status: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        out = paginate(tx, select(payment_runs).order_by(payment_runs.c.id), page, status=status)
        out["items"] = runs_out(tx, out["items"])   # the page at once, not a query per run
        return out
    return api.read(fn)


@router.get("/payment-runs/{run_id}", response_model=Envelope[RunDetail],
            summary="One payment run with payments, allocations, history and links")
def get_run(run_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: run_detail(tx, run_id), object_type="payment_run", object_id=run_id)


@router.post("/payment-runs", operation_id="pay.create_run", status_code=201, response_model=Envelope[RunDetail],
             summary="Start a draft payment run (pay_date, bank account)")
def post_run(body: RunIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_run(tx, body))


@router.post("/payment-runs/{run_id}/invoices", operation_id="pay.add", status_code=201,
             response_model=Envelope[RunDetail],
             summary="Add an approved invoice to a draft run (amount optional for partial; take_discount)")
def post_run_invoice(run_id: str, body: AddInvoiceIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: add_invoice(tx, run_id, body), object_type="payment_run", object_id=run_id)


@router.delete("/payment-runs/{run_id}/invoices/{invoice_id}", operation_id="pay.remove",
               response_model=Envelope[RunDetail], summary="Remove an invoice from a draft run")
def delete_run_invoice(run_id: str, invoice_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: remove_invoice(tx, run_id, invoice_id), object_type="payment_run", object_id=run_id)


@router.post("/payment-runs/{run_id}/submit", operation_id="pay.submit", status_code=201,
             response_model=Envelope[RunDetail], summary="Submit a draft run for approval")
def post_submit(run_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: submit_run(tx, run_id), object_type="payment_run", object_id=run_id)


@router.post("/payment-runs/{run_id}/approve", operation_id="pay.approve", status_code=201,
             response_model=Envelope[RunDetail], summary="Approve a submitted run (not the preparer; within limit)")
def post_approve_run(run_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: approve_run(tx, run_id), object_type="payment_run", object_id=run_id)


@router.post("/payment-runs/{run_id}/return", operation_id="pay.return", status_code=201,
             response_model=Envelope[RunDetail], summary="Return a submitted or approved run to draft")
def post_return_run(run_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: return_run(tx, run_id, body), object_type="payment_run", object_id=run_id)


@router.post("/payment-runs/{run_id}/cancel", operation_id="pay.cancel", status_code=201,
             response_model=Envelope[RunDetail], summary="Cancel a draft run")
def post_cancel_run(run_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: cancel_run(tx, run_id, body), object_type="payment_run", object_id=run_id)


@router.post("/payment-runs/{run_id}/release", operation_id="pay.release", status_code=201,
             response_model=Envelope[RunDetail], summary="Release an approved run (re-checks, then posts)")
def post_release_run(run_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_run(tx, run_id), object_type="payment_run", object_id=run_id)


@router.get("/payments", response_model=Envelope[Page[PaymentOut]], summary="List payments (filters: status, vendor, run)")
def list_payments(status: str | None = None, vendor: str | None = None, run: str | None = None,
                  page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        out = paginate(tx, select(payments).order_by(payments.c.id), page, status=status, vendor_id=vendor,
                       run_id=run)
        out["items"] = payments_out(tx, out["items"])   # the page at once, not queries per payment
        return out
    return api.read(fn)


@router.get("/payments/{payment_id}", response_model=Envelope[PaymentOut], summary="One payment with its allocations")
def get_payment(payment_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: payment_out(tx, tx.get(payments, payment_id, "payment")), object_type="payment",
                    object_id=payment_id)
