"""Payment runs and payments, what settles an invoice, and the counterparties of the payment
cycle (the bank, the run approver).

A run is built as a draft (invoices added, each one payment per vendor with allocations per
invoice), submitted, approved by someone other than its preparer within their payment_run
limit, and released. A submitted or approved run can always be returned to draft (so a run
whose release is refused is never stuck), and a draft can be cancelled.

Hard controls, checked when an invoice is added and again at submit, approve and release:
the invoice is approved and not on hold, the vendor is active, the vendor's remit account is
verified and is the account the payment was proposed to, the amount does not exceed what is
open, and an invoice is in at most one live proposal.

Modules: `tables`, `settlement` (how much of an invoice is settled; registered with payables),
`views`, `service`, `actors` (bank, approver), `world`, `reports` (cash position), `routes`.
"""
from __future__ import annotations

from . import actors, reports, returns, world  # noqa: F401  (counterparties, cash-position report, returns, world section)
from .routes import PaymentOut, RunDetail, RunOut, router
from .service import (
    AddInvoiceIn,
    NoteIn,
    RunIn,
    add_invoice,
    approve_run,
    cancel_run,
    check_payable,
    create_run,
    release_run,
    remove_invoice,
    return_run,
    run_total_cents,
    submit_run,
)
from .settlement import settled_cents, settled_cents_by_invoice
from .tables import LIVE_RUN, payment_allocations, payment_runs, payments
from .views import payment_out, payments_out, run_detail, run_out, runs_out
from .world import PaymentRunApprover

__all__ = ["PaymentOut", "RunDetail", "RunOut", "router", "AddInvoiceIn", "NoteIn", "RunIn", "add_invoice",
           "approve_run", "cancel_run", "check_payable", "create_run", "release_run", "remove_invoice", "return_run",
           "run_total_cents", "submit_run", "settled_cents", "settled_cents_by_invoice", "LIVE_RUN",
           "payment_allocations", "payment_runs", "payments", "payment_out", "payments_out", "run_detail",
           "run_out", "runs_out", "PaymentRunApprover"]
