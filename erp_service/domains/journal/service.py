"""Journal service functions: the manual entry lifecycle, attachments, period close and reopen."""
from __future__ import annotations

import base64
import binascii
import hashlib

from sqlalchemy import delete, select

from ...kernel.errors import Problem, invalid, refused
from ...kernel.money import from_cents, to_cents
from ...kernel.tx import Tx
from ..ledger import accounts, entry_posted, journal_entries, journal_lines, period_for, periods
from ..org import approval_limit_cents, company
from .schemas import AttachmentIn, JournalEntryIn, JournalLineIn, LinesIn, NoteIn
from .tables import attachments
from .views import entry_detail

MAX_ATTACHMENT_BYTES = 2_000_000
EDITABLE = ("draft", "returned")


def threshold_cents(tx: Tx) -> int:
    """Manual entries at or above this total need approval before posting."""
    row = tx.find(company, key="je_approval_threshold_cents")
    try:
        return int(row["value"]) if row else 500_000
    except ValueError:
        return 500_000


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
    """True for system entries: their documents carry subledger postings. A manual entry never
    does — one on a control account (only history or a migration can hold one: manual lines
    there are refused) moved the account without a document, so reversing it restores the tie
    it broke rather than breaking one."""
    return bool(e["source"] != "manual")


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
