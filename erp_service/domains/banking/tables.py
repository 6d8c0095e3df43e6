"""Banking's tables: the company's bank accounts and the bank's statement lines."""
from __future__ import annotations

from sqlalchemy import Column, Integer, String, Table, Text

from ...kernel.schema import metadata
from ...kernel.tx import register_object

bank_accounts = Table(
    "bank_accounts", metadata,
    Column("id", String, primary_key=True),              # OPER, PAYROLL, ...
    Column("name", String, nullable=False),
    Column("bank_name", String),
    Column("account_number", String),
    Column("gl_account_id", String, nullable=False),
    Column("status", String, nullable=False, default="active"),
)

bank_statement_lines = Table(
    "bank_statement_lines", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("bank_account_id", String, nullable=False, index=True),
    Column("date", String, nullable=False),
    Column("amount_cents", Integer, nullable=False),     # deposits positive, payments negative
    Column("kind", String, nullable=False),              # opening | deposit | withdrawal | payment
    Column("ref", String),
    Column("description", Text),
    Column("payment_id", String),
)

register_object("bank_account", bank_accounts)
