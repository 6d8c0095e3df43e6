"""Payment runs: building a draft, submit, approve, return, cancel, release; and the hard
controls on paying an invoice, checked when it is added and again at submit, approve and
release. Release posts, per payment: AP debit per invoice (cash + discount), cash credit,
purchase-discount credit."""
from __future__ import annotations

from pydantic import Field
from sqlalchemy import delete, func, select

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.errors import invalid, refused
from ...kernel.money import Amount, from_cents, to_cents
from ...kernel.tx import Tx
from .. import ledger
from ..banking import cash_account_of
from ..ledger import Line
from ..org import approval_limit_cents
from ..payables import ap_invoices
from ..vendors import vendors, verified_remit_account
from .settlement import settled_cents
from .tables import payment_allocations, payment_runs, payments
from .views import run_detail


class RunIn(In):
    """A new draft run."""

    pay_date: IsoDate
    bank_account: str = Field("OPER", description="Company bank account id (GET /bank-accounts).")
    memo: str | None = Field(None, max_length=2000)


class AddInvoiceIn(In):
    """An invoice to pay in a draft run."""

    invoice: str
    amount: Amount | None = Field(None, description="Cash to pay; default: everything open (less the discount taken).")
    take_discount: bool | None = Field(None, description="Default: true when the discount date is still open on the pay date.")


class NoteIn(In):
    """An optional note."""

    note: str | None = Field(None, max_length=2000)


def check_payable(tx: Tx, invoice_id: str, vendor_account_id: str | None = None) -> dict:
    """The hard controls on paying an invoice; returns the invoice. With `vendor_account_id`,
    also requires the vendor's verified remit account to still be that account."""
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


def create_run(tx: Tx, body: RunIn) -> dict:
    """Start a draft payment run."""
    cash_account_of(tx, body.bank_account)
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
    assert remit is not None  # check_payable refused the invoice otherwise
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
    run = tx.get(payment_runs, run_id, "payment run")
    if run["status"] != "approved":
        raise refused("bad_status", f"Payment run {run_id} is {run['status']}; only an approved run can be released.",
                      status=run["status"])
    pays = _recheck(tx, run_id)
    cash_account = cash_account_of(tx, run["bank_account_id"])
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
