"""Journal response models and routes: the ledger's read routes and the manual entry lifecycle."""
from __future__ import annotations

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ..ledger import accounts, budgets, journal_entries, journal_lines, periods, terms
from ..payables import HistoryOut
from .schemas import AttachmentIn, JournalEntryIn, LinesIn, NoteIn
from .service import approve_entry, attach, close_period, create_entry, edit_lines, post_entry, reopen_period, return_entry, reverse_entry, submit_entry
from .tables import attachments
from .views import attachment_meta, entry_detail, entry_out


class AccountOut(BaseModel):
    id: str
    name: str
    type: str
    control: str | None = None
    department_id: str | None = None
    active: bool


class PeriodOut(BaseModel):
    id: str
    start_date: str
    end_date: str
    status: str


class TermsOut(BaseModel):
    id: str
    description: str
    net_days: int
    discount_pct: float
    discount_days: int


class BudgetOut(BaseModel):
    department: str
    account: str
    period: str
    amount: float


class EntryOut(BaseModel):
    id: str
    status: str
    entry_date: str
    period: str
    source: str
    source_ref: str | None = None
    memo: str | None = None
    prepared_by: str | None = None
    created_on: str
    approved_by: str | None = None
    posted_on: str | None = None
    reverses: str | None = None
    reversed_by: str | None = None
    total: float


class EntryLineOut(BaseModel):
    line_no: int
    account: str
    debit: float
    credit: float
    memo: str | None = None
    party_type: str | None = None
    party_id: str | None = None
    doc_ref: str | None = None


class AttachmentMeta(BaseModel):
    id: str
    filename: str
    content_type: str
    size: int
    sha256: str
    attached_by: str | None = None
    attached_on: str


class EntryDetail(EntryOut):
    lines: list[EntryLineOut]
    attachments: list[AttachmentMeta]
    history: list[HistoryOut]
    links: dict[str, list[str]]


class AttachmentOut(BaseModel):
    # Another domain has a model of this name, so /openapi.json names this one by its module: keep the
    # name it had before the domain became a package.
    __module__ = "erp_service.domains.journal"
    id: str
    filename: str
    content_type: str
    size: int
    sha256: str
    attached_by: str | None = None
    attached_on: str
    doc_type: str
    doc_id: str
    content_base64: str


# Routes -------------------------------------------------------------------------------------------

router = DomainRouter(tags=["ledger"])


@router.get("/accounts", response_model=Envelope[Page[AccountOut]], summary="Chart of accounts (filters: type, control)")
def list_accounts(type: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(accounts).order_by(accounts.c.id), page,
                                        render=lambda r: {**r, "active": bool(r["active"])}, type=type))


@router.get("/periods", response_model=Envelope[Page[PeriodOut]], summary="Accounting periods (filter: status)")
def list_periods(status: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(periods).order_by(periods.c.id), page, status=status))


@router.get("/terms", response_model=Envelope[Page[TermsOut]], summary="Payment terms")
def list_terms(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(terms).order_by(terms.c.id), page))


@router.get("/budgets", response_model=Envelope[Page[BudgetOut]], summary="Budgets (filters: department, account, period)")
def list_budgets(department: str | None = None, account: str | None = None, period: str | None = None,
                 page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def render(r):
        return {"department": r["department_id"], "account": r["account_id"], "period": r["period_id"],
                "amount": from_cents(r["amount_cents"])}
    return api.read(lambda tx: paginate(tx, select(budgets).order_by(budgets.c.department_id, budgets.c.account_id,
                                                                        budgets.c.period_id), page, render=render,
                                        department_id=department, account_id=account, period_id=period))


@router.get("/journal-entries", response_model=Envelope[Page[EntryOut]],
            summary="Journal entries (filters: period, source, status, source_ref, account)")
def list_entries(period: str | None = None, source: str | None = None, status: str | None = None,
                 source_ref: str | None = None, account: str | None = None,
                 page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(journal_entries).order_by(journal_entries.c.id)
        if account:
            stmt = stmt.where(journal_entries.c.id.in_(select(journal_lines.c.entry_id)
                                                       .where(journal_lines.c.account_id == account)))
        return paginate(tx, stmt, page, render=lambda r: entry_out(tx, r), period_id=period, source=source,
                        status=status, source_ref=source_ref)
    return api.read(fn)


@router.get("/journal-entries/{entry_id}", response_model=Envelope[EntryDetail],
            summary="One journal entry with lines, attachments, history and links")
def get_entry(entry_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: entry_detail(tx, entry_id), object_type="journal_entry", object_id=entry_id)


@router.get("/attachments/{attachment_id}", response_model=Envelope[AttachmentOut],
            summary="One support attachment with its content (base64)")
def get_attachment(attachment_id: str, api: Api = Depends(read_api)):
    def fn(tx: Tx):
        a = tx.get(attachments, attachment_id, "attachment")
        return {**attachment_meta(a), "doc_type": a["doc_type"], "doc_id": a["doc_id"], "content_base64": a["content_b64"]}
    return api.read(fn, object_type="attachment", object_id=attachment_id)


@router.post("/journal-entries", operation_id="je.create", status_code=201, response_model=Envelope[EntryDetail],
             summary="Create a manual journal entry (draft; at least two balanced lines)")
def post_entry_route(body: JournalEntryIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_entry(tx, body))


@router.put("/journal-entries/{entry_id}/lines", operation_id="je.edit", response_model=Envelope[EntryDetail],
            summary="Replace the lines of a draft or returned entry")
def put_lines(entry_id: str, body: LinesIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: edit_lines(tx, entry_id, body), object_type="journal_entry", object_id=entry_id)


@router.post("/journal-entries/{entry_id}/attachments", operation_id="je.attach", status_code=201,
             response_model=Envelope[EntryDetail], summary="Attach support (base64) before posting")
def post_attachment(entry_id: str, body: AttachmentIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: attach(tx, entry_id, body), object_type="journal_entry", object_id=entry_id)


@router.post("/journal-entries/{entry_id}/submit", operation_id="je.submit", status_code=201,
             response_model=Envelope[EntryDetail], summary="Submit for approval")
def post_submit(entry_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: submit_entry(tx, entry_id), object_type="journal_entry", object_id=entry_id)


@router.post("/journal-entries/{entry_id}/approve", operation_id="je.approve", status_code=201,
             response_model=Envelope[EntryDetail], summary="Approve (not the preparer; within limit)")
def post_approve(entry_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: approve_entry(tx, entry_id), object_type="journal_entry", object_id=entry_id)


@router.post("/journal-entries/{entry_id}/return", operation_id="je.return", status_code=201,
             response_model=Envelope[EntryDetail], summary="Return a submitted or approved entry to its preparer")
def post_return(entry_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: return_entry(tx, entry_id, body), object_type="journal_entry", object_id=entry_id)


@router.post("/journal-entries/{entry_id}/post", operation_id="je.post", status_code=201,
             response_model=Envelope[EntryDetail], summary="Post (approval first at or above the threshold)")
def post_post(entry_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: post_entry(tx, entry_id), object_type="journal_entry", object_id=entry_id)


@router.post("/journal-entries/{entry_id}/reverse", operation_id="je.reverse", status_code=201,
             response_model=Envelope[EntryDetail],
             summary="Reverse a posted manual entry with its mirror (entries with subledger postings are refused)")
def post_reverse(entry_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: reverse_entry(tx, entry_id, body), object_type="journal_entry", object_id=entry_id)


@router.post("/periods/{period_id}/close", operation_id="period.close", status_code=201,
             response_model=Envelope[PeriodOut], summary="Close a period")
def post_close(period_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: close_period(tx, period_id, body), object_type="period", object_id=period_id)


@router.post("/periods/{period_id}/reopen", operation_id="period.reopen", status_code=201,
             response_model=Envelope[PeriodOut], summary="Reopen a closed period")
def post_reopen(period_id: str, body: NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: reopen_period(tx, period_id, body), object_type="period", object_id=period_id)
