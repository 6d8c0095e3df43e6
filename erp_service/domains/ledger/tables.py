"""General ledger tables: accounts, posting rules, periods, journal entries and their lines,
budgets, and the payment terms vendors and customers share."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

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
