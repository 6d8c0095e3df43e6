"""Banking's routes: bank accounts, statement lines, and booking the bank's own lines."""
from __future__ import annotations

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.dates import IsoDate
from ...kernel.listing import PageRequest, paginate
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from .booking import BookLineIn, book_line, line_out
from .service import bank_account_out
from .tables import bank_accounts, bank_statement_lines


class BankAccountOut(BaseModel):
    id: str
    name: str
    bank_name: str | None = None
    account_number: str | None = None
    gl_account: str
    status: str
    balance: float
    statement_balance: float


class StatementLineOut(BaseModel):
    id: int
    bank_account_id: str
    date: str
    amount: float
    kind: str
    ref: str | None = None
    description: str | None = None
    payment_id: str | None = None


class StatementLineDetail(StatementLineOut):
    journal_entry: str | None = None


router = DomainRouter(tags=["banking"])


@router.get("/bank-accounts", response_model=Envelope[Page[BankAccountOut]],
            summary="Company bank accounts with book (GL) and statement balances")
def list_bank_accounts(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(bank_accounts).order_by(bank_accounts.c.id), page,
                                        render=lambda r: bank_account_out(tx, r)))


@router.get("/bank-statement-lines", response_model=Envelope[Page[StatementLineOut]],
            summary="Bank statement lines (filters: bank_account, kind, date_from, date_to)")
def list_statement_lines(bank_account: str | None = None, kind: str | None = None, date_from: IsoDate | None = None,
                         date_to: IsoDate | None = None, page: PageRequest = Depends(page_params),
                         api: Api = Depends(read_api)):
    def render(r: dict) -> dict:
        return {**{k: v for k, v in r.items() if k != "amount_cents"}, "amount": from_cents(r["amount_cents"])}

    def fn(tx: Tx):
        stmt = select(bank_statement_lines).order_by(bank_statement_lines.c.id)
        if date_from:
            stmt = stmt.where(bank_statement_lines.c.date >= date_from.isoformat())
        if date_to:
            stmt = stmt.where(bank_statement_lines.c.date <= date_to.isoformat())
        return paginate(tx, stmt, page, render=render, bank_account_id=bank_account, kind=kind)
    return api.read(fn)


@router.get("/bank-statement-lines/{line_id}", response_model=Envelope[StatementLineDetail],
            summary="One statement line, with the entry that booked it (fee and interest lines)")
def get_statement_line(line_id: int, api: Api = Depends(read_api)):
    return api.read(lambda tx: line_out(tx, tx.get(bank_statement_lines, line_id, "bank statement line")),
                    object_type="bank_statement_line", object_id=str(line_id))


@router.post("/bank-statement-lines/{line_id}/book", operation_id="bank.book", status_code=201,
             response_model=Envelope[StatementLineDetail], openapi_extra={"x-permission": "je.post"},
             summary="Book a fee or interest line the bank originated (account: the offsetting account)")
def post_book_line(line_id: int, body: BookLineIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: book_line(tx, line_id, body), object_type="bank_statement_line",
                     object_id=str(line_id))
