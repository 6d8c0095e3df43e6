"""Payments' routes and response models."""
from __future__ import annotations

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from ..payables import HistoryOut
from .returns import record_return
from .service import (
    AddInvoiceIn,
    NoteIn,
    RunIn,
    add_invoice,
    approve_run,
    cancel_run,
    create_run,
    release_run,
    remove_invoice,
    return_run,
    submit_run,
)
from .tables import payment_runs, payments
from .views import payment_out, payments_out, run_detail, runs_out


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


router = DomainRouter(tags=["payments"])


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


@router.post("/payments/{payment_id}/record-return", operation_id="pay.record_return", status_code=201,
             response_model=Envelope[PaymentOut], openapi_extra={"x-permission": "je.post"},
             summary="Record a payment the bank returned (its return line on the statement): cash and the "
                     "payable back, invoices open again")
def post_record_return(payment_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: record_return(tx, payment_id), object_type="payment", object_id=payment_id)
