"""Manual journal entries, their support attachments, periods, and the ledger's read routes
(`/accounts`, `/periods`, `/terms`, `/budgets`, `/journal-entries`).

Manual entry lifecycle: draft → submitted → approved → posted → reversed; submitted/approved
can be returned (→ returned, editable again like a draft). Only draft/returned entries can be
edited. An entry needs at least two lines and must balance. The preparer cannot approve it;
at or above the company's `je_approval_threshold_cents` (default 500,000 = $5,000) it must be
approved before posting; below it, it can be posted straight from draft/returned/submitted.

Control accounts (AP, AR, GRNI, inventory, WIP, unapplied cash) are kept by their subledgers, so
manual lines cannot post to them (`control_account`), and an entry that carries subledger
postings — any system entry, or an entry touching a control account — cannot be reversed here
(`subledger_entry`): its own document (void the invoice, reverse the receipt …) undoes it, so
every control account stays tied to its subledger.
"""
from __future__ import annotations

import base64
import binascii
import hashlib

from fastapi import Depends
from pydantic import BaseModel, Field, model_validator
from sqlalchemy import Column, Integer, String, Table, Text, delete, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..http.lazy_routes import DomainRouter
from ..kernel.dates import IsoDate
from ..kernel.errors import Problem, invalid, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Amount, from_cents, to_cents
from ..kernel.schema import metadata
from ..kernel.tx import Tx, register_object
from .ledger import accounts, budgets, entry_posted, journal_entries, journal_lines, period_for, periods, terms
from .org import approval_limit_cents, company
from .payables import HistoryOut

attachments = Table(
    "attachments", metadata,
    Column("id", String, primary_key=True),          # ATT-10001
    Column("doc_type", String, nullable=False),
    Column("doc_id", String, nullable=False, index=True),
    Column("filename", String, nullable=False),
    Column("content_type", String, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String, nullable=False),
    Column("content_b64", Text, nullable=False),
    Column("created_by", String),
    Column("created_on", String, nullable=False),
)

register_object("period", periods)
# journal_entry is registered by ledger; attachments are snapshotted with it.
register_object("journal_entry", journal_entries, [(journal_lines, "entry_id"), (attachments, "doc_id")])

MAX_ATTACHMENT_BYTES = 2_000_000
EDITABLE = ("draft", "returned")


def threshold_cents(tx: Tx) -> int:
    """Manual entries at or above this total need approval before posting."""
    row = tx.find(company, key="je_approval_threshold_cents")
    try:
        return int(row["value"]) if row else 500_000
    except ValueError:
        return 500_000


# Views --------------------------------------------------------------------------------------------

def entry_total_cents(tx: Tx, entry_id: str) -> int:
    """Sum of the debits of an entry."""
    return sum(l["debit_cents"] for l in tx.rows(journal_lines, entry_id=entry_id))


def entry_out(tx: Tx, e: dict) -> dict:
    """The list view of a journal entry."""
    return {"id": e["id"], "status": e["status"], "entry_date": e["entry_date"], "period": e["period_id"],
            "source": e["source"], "source_ref": e["source_ref"], "memo": e["memo"], "prepared_by": e["created_by"],
            "created_on": e["created_on"], "approved_by": e["approved_by"], "posted_on": e["posted_on"],
            "reverses": e["reverses"], "reversed_by": e["reversed_by"],
            "total": from_cents(entry_total_cents(tx, e["id"]))}


def entry_detail(tx: Tx, entry_id: str) -> dict:
    """An entry with lines, attachments (metadata), history and links."""
    e = tx.get(journal_entries, entry_id, "journal entry")
    out = entry_out(tx, e)
    out["lines"] = [{"line_no": l["line_no"], "account": l["account_id"], "debit": from_cents(l["debit_cents"]),
                     "credit": from_cents(l["credit_cents"]), "memo": l["memo"], "party_type": l["party_type"],
                     "party_id": l["party_id"], "doc_ref": l["doc_ref"]}
                    for l in tx.rows(journal_lines, entry_id=entry_id)]
    out["attachments"] = [attachment_meta(a) for a in tx.rows(attachments, doc_type="journal_entry", doc_id=entry_id)]
    out["history"] = tx.history("journal_entry", entry_id)
    links = {"journal_entry": [x for x in (e["reverses"], e["reversed_by"]) if x]}
    if e["source_ref"]:
        links["source"] = [e["source_ref"]]
    out["links"] = links
    return out


def attachment_meta(a: dict) -> dict:
    return {"id": a["id"], "filename": a["filename"], "content_type": a["content_type"], "size": a["size"],
            "sha256": a["sha256"], "attached_by": a["created_by"], "attached_on": a["created_on"]}


# Request models -----------------------------------------------------------------------------------

class JournalLineIn(In):
    account: str
    debit: Amount = Field(0, ge=0)  # type: ignore[assignment]
    credit: Amount = Field(0, ge=0)  # type: ignore[assignment]
    memo: str | None = Field(None, max_length=500)

    @model_validator(mode="after")
    def _one_side(self):
        if (self.debit > 0) == (self.credit > 0):
            raise ValueError("each line has either a debit or a credit")
        return self


class JournalEntryIn(In):
    entry_date: IsoDate
    memo: str = Field(min_length=1, max_length=2000)
    lines: list[JournalLineIn] = Field(min_length=2, max_length=200)


class LinesIn(In):
    lines: list[JournalLineIn] = Field(min_length=2, max_length=200)


class AttachmentIn(In):
    filename: str = Field(min_length=1, max_length=200)
    content_type: str = Field("application/pdf", max_length=100)
    content_base64: str = Field(min_length=1)


class NoteIn(In):
    note: str | None = Field(None, max_length=2000)


# Service functions --------------------------------------------------------------------------------

def _write_lines(tx: Tx, entry_id: str, lines: list[JournalLineIn]) -> None:
    debit = sum(to_cents(l.debit) for l in lines)
    credit = sum(to_cents(l.credit) for l in lines)
    if debit != credit:
        raise Problem(422, "unbalanced", f"Debits {from_cents(debit):.2f} and credits {from_cents(credit):.2f} "
                                         "differ; a journal entry must balance.")
    for l in lines:
        acct = tx.find(accounts, id=l.account)
        if acct is None:
            raise invalid(f"Account {l.account} does not exist.")
        if not acct["active"]:
            raise invalid(f"Account {l.account} is inactive.")
        if acct["control"]:
            raise refused("control_account", f"Account {l.account} ({acct['name']}) is a control account kept by the "
                                             f"{acct['control']} subledger; manual entries cannot post to it.")
    tx.conn.execute(delete(journal_lines).where(journal_lines.c.entry_id == entry_id))
    for n, l in enumerate(lines, start=1):
        tx.insert(journal_lines, entry_id=entry_id, line_no=n, account_id=l.account, debit_cents=to_cents(l.debit),
                  credit_cents=to_cents(l.credit), memo=l.memo)


def _period_id(tx: Tx, day: str) -> str:
    row = tx.one(select(periods).where(periods.c.start_date <= day, periods.c.end_date >= day))
    if row is None:
        raise refused("period_missing", f"No accounting period contains {day}.")
    return row["id"]


def create_entry(tx: Tx, body: JournalEntryIn) -> dict:
    """Create a manual entry as a draft."""
    day = body.entry_date.isoformat()
    row = tx.create_doc("journal_entry", journal_entries, "JE", "draft", entry_date=day,
                        period_id=_period_id(tx, day), source="manual", memo=body.memo)
    _write_lines(tx, row["id"], body.lines)
    return entry_detail(tx, row["id"])


def _manual(tx: Tx, entry_id: str) -> dict:
    e = tx.get(journal_entries, entry_id, "journal entry")
    if e["source"] != "manual":
        raise refused("not_editable", f"Journal entry {entry_id} is a {e['source']} system entry; it changes only "
                                      "through its source document.")
    return e


def edit_lines(tx: Tx, entry_id: str, body: LinesIn) -> dict:
    """Replace the lines of a draft or returned entry."""
    e = _manual(tx, entry_id)
    if e["status"] not in EDITABLE:
        raise refused("not_editable", f"Journal entry {entry_id} is {e['status']}; only draft or returned entries "
                                      "can be edited.")
    tx.touch("journal_entry", entry_id)
    _write_lines(tx, entry_id, body.lines)
    return entry_detail(tx, entry_id)


def attach(tx: Tx, entry_id: str, body: AttachmentIn) -> dict:
    """Attach support (base64) to an entry that is not yet posted."""
    e = _manual(tx, entry_id)
    if e["status"] not in ("draft", "returned", "submitted", "approved"):
        raise refused("not_editable", f"Journal entry {entry_id} is {e['status']}; support is attached before posting.")
    try:
        raw = base64.b64decode(body.content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise invalid("content_base64 is not valid base64.") from None
    if not raw or len(raw) > MAX_ATTACHMENT_BYTES:
        raise invalid(f"An attachment must be 1 byte to {MAX_ATTACHMENT_BYTES} bytes.")
    tx.touch("journal_entry", entry_id)
    tx.insert(attachments, id=tx.next_id("ATT"), doc_type="journal_entry", doc_id=entry_id, filename=body.filename,
              content_type=body.content_type, size=len(raw), sha256=hashlib.sha256(raw).hexdigest(),
              content_b64=base64.b64encode(raw).decode("ascii"), created_by=tx.actor.user_id,
              created_on=tx.business_date)
    return entry_detail(tx, entry_id)


def _check_complete(tx: Tx, entry_id: str) -> int:
    lines = tx.rows(journal_lines, entry_id=entry_id)
    debit = sum(l["debit_cents"] for l in lines)
    if len(lines) < 2 or debit != sum(l["credit_cents"] for l in lines) or debit == 0:
        raise Problem(422, "unbalanced", f"Journal entry {entry_id} needs at least two lines that balance.")
    return debit


def submit_entry(tx: Tx, entry_id: str) -> dict:
    """Submit a draft or returned entry for approval."""
    _manual(tx, entry_id)
    _check_complete(tx, entry_id)
    tx.set_status("journal_entry", journal_entries, entry_id, "submitted", "submitted", allowed_from=EDITABLE)
    return entry_detail(tx, entry_id)


def approve_entry(tx: Tx, entry_id: str) -> dict:
    """Approve a submitted entry: not its preparer, within the journal_entry approval limit."""
    e = _manual(tx, entry_id)
    if e["status"] != "submitted":
        raise refused("bad_status", f"Journal entry {entry_id} is {e['status']}; only a submitted entry can be "
                                    "approved.", status=e["status"])
    if e["created_by"] == tx.actor.user_id:
        raise refused("preparer_cannot_approve", f"You prepared journal entry {entry_id}; someone else must approve it.")
    total = _check_complete(tx, entry_id)
    limit = approval_limit_cents(tx, tx.actor.user_id, "journal_entry")
    if total > limit:
        raise refused("over_limit", f"Journal entry {entry_id} totals {from_cents(total):.2f}, above your "
                                    f"journal_entry approval limit of {from_cents(limit):.2f}.")
    tx.set_status("journal_entry", journal_entries, entry_id, "approved", "approved", allowed_from=["submitted"],
                  approved_by=tx.actor.user_id)
    return entry_detail(tx, entry_id)


def return_entry(tx: Tx, entry_id: str, body: NoteIn | None) -> dict:
    """Return a submitted or approved entry to its preparer (editable again)."""
    _manual(tx, entry_id)
    tx.set_status("journal_entry", journal_entries, entry_id, "returned", (body.note if body else None) or "returned",
                  allowed_from=["submitted", "approved"], approved_by=None)
    return entry_detail(tx, entry_id)


def post_entry(tx: Tx, entry_id: str) -> dict:
    """Post an entry into its (open) period; at or above the threshold it must be approved."""
    e = _manual(tx, entry_id)
    total = _check_complete(tx, entry_id)
    if e["status"] not in ("draft", "returned", "submitted", "approved"):
        raise refused("bad_status", f"Journal entry {entry_id} is {e['status']}; it cannot be posted.", status=e["status"])
    if total >= threshold_cents(tx) and e["status"] != "approved":
        raise refused("approval_required", f"Journal entry {entry_id} totals {from_cents(total):.2f}, at or above the "
                                           f"{from_cents(threshold_cents(tx)):.2f} threshold; it must be approved first.")
    period = period_for(tx, e["entry_date"])
    tx.set_status("journal_entry", journal_entries, entry_id, "posted", "posted", period_id=period["id"],
                  posted_on=tx.business_date)
    entry_posted(tx, entry_id)
    return entry_detail(tx, entry_id)


def carries_subledger(tx: Tx, e: dict) -> bool:
    """True for system entries and entries touching a control account."""
    if e["source"] != "manual":
        return True
    ids = [l["account_id"] for l in tx.rows(journal_lines, entry_id=e["id"])]
    return tx.one(select(accounts.c.id).where(accounts.c.id.in_(ids), accounts.c.control.is_not(None))) is not None


def reverse_entry(tx: Tx, entry_id: str, body: NoteIn | None) -> dict:
    """Reverse a posted manual entry with its mirror, dated today (today's period must be open)."""
    e = tx.get(journal_entries, entry_id, "journal entry")
    if carries_subledger(tx, e):
        raise refused("subledger_entry", f"Journal entry {entry_id} carries subledger postings ({e['source']}"
                                         f"{' ' + e['source_ref'] if e['source_ref'] else ''}); undo it through its "
                                         "source document so the control accounts stay tied.")
    if e["status"] != "posted":
        raise refused("bad_status", f"Journal entry {entry_id} is {e['status']}; only a posted entry can be reversed.",
                      status=e["status"])
    period = period_for(tx, tx.business_date)
    note = (body.note if body else None) or f"reversal of {entry_id}"
    mirror = tx.create_doc("journal_entry", journal_entries, "JE", "posted", entry_date=tx.business_date,
                           period_id=period["id"], source="manual", memo=note, reverses=entry_id,
                           posted_on=tx.business_date, approved_by=e["approved_by"])
    for l in tx.rows(journal_lines, entry_id=entry_id):
        tx.insert(journal_lines, entry_id=mirror["id"], line_no=l["line_no"], account_id=l["account_id"],
                  debit_cents=l["credit_cents"], credit_cents=l["debit_cents"], memo=l["memo"],
                  party_type=l["party_type"], party_id=l["party_id"], doc_ref=l["doc_ref"])
    entry_posted(tx, mirror["id"])
    tx.primary = ("journal_entry", entry_id)
    tx.set_status("journal_entry", journal_entries, entry_id, "reversed", note, allowed_from=["posted"],
                  reversed_by=mirror["id"])
    return entry_detail(tx, entry_id)


def close_period(tx: Tx, period_id: str, body: NoteIn | None) -> dict:
    """Close an open period: nothing can be posted into it afterwards."""
    tx.get(periods, period_id, "period")
    tx.set_status("period", periods, period_id, "closed", (body.note if body else None) or "closed",
                  allowed_from=["open"])
    return tx.get(periods, period_id)


def reopen_period(tx: Tx, period_id: str, body: NoteIn | None) -> dict:
    """Reopen a closed period."""
    tx.get(periods, period_id, "period")
    tx.set_status("period", periods, period_id, "open", (body.note if body else None) or "reopened",
                  allowed_from=["closed"])
    return tx.get(periods, period_id)


# Response models ----------------------------------------------------------------------------------

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
