"""Posting: the one function every domain posts a system entry through (`post`), the accounts
its lines resolve to, the open period of a day, and the observers told of every posted entry."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import select

from ...kernel.errors import Problem, invalid, refused
from ...kernel.tx import Tx
from .tables import accounts, journal_entries, journal_lines, periods, posting_rules


@dataclass(frozen=True)
class Line:
    """One line of a posting: an account (or a posting-rule key) and a signed amount."""

    account: str                  # account id, or "rule:<key>" for a posting rule
    amount_cents: int             # positive = debit, negative = credit
    memo: str | None = None
    party_type: str | None = None
    party_id: str | None = None
    doc_ref: str | None = None


def rule_account(tx: Tx, key: str) -> str:
    """The account a posting-rule key maps to."""
    row = tx.find(posting_rules, key=key)
    if row is None:
        raise Problem(500, "no_posting_rule", f"No posting rule {key!r} is configured.")
    return row["account_id"]


def period_for(tx: Tx, day: str) -> dict:
    """The period containing `day`; refused if none exists or it is closed."""
    row = tx.one(select(periods).where(periods.c.start_date <= day, periods.c.end_date >= day))
    if row is None:
        raise refused("period_missing", f"No accounting period contains {day}.")
    if row["status"] != "open":
        raise refused("period_closed", f"Period {row['id']} is closed; nothing can be posted on {day}.")
    return row


def _resolve(tx: Tx, account: str) -> str:
    if account.startswith("rule:"):
        return rule_account(tx, account[5:])
    if tx.find(accounts, id=account) is None:
        raise invalid(f"Account {account} does not exist.")
    return account


def post(tx: Tx, *, source: str, source_ref: str | None, memo: str, lines: Iterable[Line],
         entry_date: str | None = None) -> str:
    """Post a balanced system entry now (status posted) and return its id.

    Raises period_closed/period_missing (409) and a 500 `unbalanced` problem for a programming
    error: system postings must balance.
    """
    day = entry_date or tx.business_date
    period = period_for(tx, day)
    resolved = [(l, _resolve(tx, l.account)) for l in lines if l.amount_cents != 0]
    if sum(l.amount_cents for l, _ in resolved) != 0:
        raise Problem(500, "unbalanced", f"System posting for {source_ref} does not balance.")
    if not resolved:
        return ""
    entry = tx.create_doc("journal_entry", journal_entries, "JE", "posted", entry_date=day,
                          period_id=period["id"], source=source, source_ref=source_ref, memo=memo,
                          posted_on=tx.business_date)
    for n, (l, acct) in enumerate(resolved, start=1):
        tx.insert(journal_lines, entry_id=entry["id"], line_no=n, account_id=acct,
                  debit_cents=max(l.amount_cents, 0), credit_cents=max(-l.amount_cents, 0), memo=l.memo,
                  party_type=l.party_type, party_id=l.party_id, doc_ref=l.doc_ref)
    entry_posted(tx, entry["id"])
    return entry["id"]


#: fn(tx, entry_id), called in the posting's transaction for every entry that reaches the
#: ledger (system postings here, manual entries and their reversals in `journal`).
PostingObserver = Callable[[Tx, str], None]
POSTING_OBSERVERS: list[PostingObserver] = []


def register_posting_observer(fn: PostingObserver) -> None:
    """Be told of every entry posted (banking writes the bank's side of cash movements)."""
    POSTING_OBSERVERS.append(fn)


def entry_posted(tx: Tx, entry_id: str) -> None:
    """Tell the observers that `entry_id` is now posted."""
    for fn in POSTING_OBSERVERS:
        fn(tx, entry_id)
