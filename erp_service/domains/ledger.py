"""General ledger core: accounts, posting rules, periods, journal entries and lines, and the
one function every domain posts through (`post`). Subledger-owning domains register a balance
function (`register_subledger`) so control ties can be checked for every control account.

The journal-entry lifecycle routes (manual entries: draft → submitted → approved → posted →
reversed), attachments and period close/reopen live in `journal`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Float, Integer, String, Table, Text, func, select

from ..kernel.errors import Problem, invalid, refused
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object

accounts = Table(
    "accounts", metadata,
    Column("id", String, primary_key=True),            # account number, e.g. "2000"
    Column("name", String, nullable=False),
    Column("type", String, nullable=False),            # asset | liability | equity | revenue | expense
    Column("control", String),                         # subledger key when this is a control account
    Column("department_id", String),
    Column("active", Integer, nullable=False, default=1),
)

#: Which account each kind of system posting goes to (keys: cash, ar, ap, grni, inventory, ...).
posting_rules = Table(
    "posting_rules", metadata,
    Column("key", String, primary_key=True),
    Column("account_id", String, nullable=False),
)

periods = Table(
    "periods", metadata,
    Column("id", String, primary_key=True),             # "2026-10"
    Column("start_date", String, nullable=False),
    Column("end_date", String, nullable=False),
    Column("status", String, nullable=False),           # open | closed
)

journal_entries = Table(
    "journal_entries", metadata,
    *doc_columns(),                                     # status: draft|submitted|approved|posted|reversed|returned
    Column("entry_date", String, nullable=False),
    Column("period_id", String, nullable=False),
    Column("source", String, nullable=False),           # manual | ap | ar | inventory | payment | ...
    Column("source_ref", String),                       # the document that produced a system entry
    Column("memo", Text),
    Column("approved_by", String),
    Column("posted_on", String),
    Column("reverses", String),                         # id of the entry this one reverses
    Column("reversed_by", String),
)

journal_lines = Table(
    "journal_lines", metadata,
    Column("entry_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("account_id", String, nullable=False),
    Column("debit_cents", Integer, nullable=False, default=0),
    Column("credit_cents", Integer, nullable=False, default=0),
    Column("memo", Text),
    Column("party_type", String),                       # vendor | customer | item ... (subledger link)
    Column("party_id", String),
    Column("doc_ref", String),
)

budgets = Table(
    "budgets", metadata,
    Column("department_id", String, primary_key=True),
    Column("account_id", String, primary_key=True),
    Column("period_id", String, primary_key=True),
    Column("amount_cents", Integer, nullable=False),
)

#: Payment terms shared by vendors and customers.
terms = Table(
    "terms", metadata,
    Column("id", String, primary_key=True),             # NET30, 2/10N30, ...
    Column("description", String, nullable=False),
    Column("net_days", Integer, nullable=False),
    Column("discount_pct", Float, nullable=False, default=0.0),
    Column("discount_days", Integer, nullable=False, default=0),
)

register_object("journal_entry", journal_entries, [(journal_lines, "entry_id")])


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


# Balances, subledgers, ties ------------------------------------------------------------------

SubledgerFn = Callable[[Any, str | None], int]   # (connection, as_of date or None) -> cents
SUBLEDGERS: dict[str, SubledgerFn] = {}


def register_subledger(key: str, fn: SubledgerFn) -> None:
    """Declare how to compute the subledger balance behind control key `key` (debit positive)."""
    SUBLEDGERS[key] = fn


def account_balances(conn, as_of: str | None = None) -> dict[str, int]:
    """Debit-positive balance per account of posted (and reversed) entries up to `as_of`."""
    stmt = (select(journal_lines.c.account_id,
                   func.sum(journal_lines.c.debit_cents - journal_lines.c.credit_cents))
            .join(journal_entries, journal_entries.c.id == journal_lines.c.entry_id)
            .where(journal_entries.c.status.in_(("posted", "reversed")))
            .group_by(journal_lines.c.account_id))
    if as_of:
        stmt = stmt.where(journal_entries.c.entry_date <= as_of)
    return {a: int(b or 0) for a, b in conn.execute(stmt)}


def trial_balance(conn, as_of: str | None = None) -> dict:
    """Balances per account, total debits and credits, and whether they balance."""
    bals = account_balances(conn, as_of)
    names = {r.id: (r.name, r.type) for r in conn.execute(select(accounts))}
    rows = [{"account": a, "name": names.get(a, ("?", "?"))[0], "type": names.get(a, ("?", "?"))[1],
             "debit": max(b, 0) / 100, "credit": max(-b, 0) / 100} for a, b in sorted(bals.items())]
    debit = sum(max(b, 0) for b in bals.values())
    credit = sum(max(-b, 0) for b in bals.values())
    return {"as_of": as_of, "rows": rows, "total_debit": debit / 100, "total_credit": credit / 100,
            "balanced": debit == credit}


def control_ties(conn, as_of: str | None = None) -> list[dict]:
    """For each control account: GL balance, subledger balance, difference, tied."""
    bals = account_balances(conn, as_of)
    out = []
    for row in conn.execute(select(accounts).where(accounts.c.control.is_not(None)).order_by(accounts.c.id)):
        fn = SUBLEDGERS.get(row.control)
        gl = bals.get(row.id, 0)
        sub = fn(conn, as_of) if fn else None
        out.append({"control": row.control, "account": row.id, "name": row.name, "gl": gl / 100,
                    "subledger": None if sub is None else sub / 100,
                    "difference": None if sub is None else (gl - sub) / 100,
                    "tied": sub is not None and gl == sub})
    return out
