"""Booking the bank's own statement items in the company's books.

A fee or interest line the bank originated (`actors`) is booked with one named action,
`POST /bank-statement-lines/{id}/book` with the offsetting account: a system entry (source
``bank``, source_ref ``BSL-<line id>``) dated the line's date, cash against that account. The
bank's feed does not report ``bank`` entries (the line is already on the statement), so booking
makes the book balance meet the statement without a second line. A line is booked once; lines
the book already holds (opening, deposits, withdrawals, payments) and returned payments
(booked through the payment: `payments.record_return`) are not bookable here.
"""
from __future__ import annotations

from typing import Any

from pydantic import Field
from sqlalchemy import select

from ...http.api import In
from ...kernel.errors import invalid, refused
from ...kernel.money import from_cents
from ...kernel.tx import Tx, register_object
from .. import ledger
from .tables import bank_accounts, bank_statement_lines

#: Statement-line kinds the company books against an account of its choice.
BOOKABLE = ("fee", "interest")
SOURCE = "bank"

register_object("bank_statement_line", bank_statement_lines)


class BookLineIn(In):
    """How to book a bank-originated line: the offsetting account (bank fees, interest income)."""

    account: str = Field(min_length=1, max_length=20)
    memo: str | None = Field(None, max_length=500)


def line_ref(line_id: int) -> str:
    """The source_ref of the entry that books statement line `line_id`."""
    return f"BSL-{line_id}"


def booked_entry(tx: Tx, line_id: int) -> str | None:
    """The posted entry that booked the line, if any."""
    row = tx.one(select(ledger.journal_entries.c.id).where(
        ledger.journal_entries.c.source == SOURCE, ledger.journal_entries.c.source_ref == line_ref(line_id),
        ledger.journal_entries.c.status == "posted"))
    return str(row["id"]) if row else None


def line_out(tx: Tx, row: dict[str, Any]) -> dict[str, Any]:
    """A statement line as the API shows it, with the entry that booked it."""
    out = {k: v for k, v in row.items() if k != "amount_cents"}
    return {**out, "amount": from_cents(row["amount_cents"]), "journal_entry": booked_entry(tx, row["id"])}


def book_line(tx: Tx, line_id: int, body: BookLineIn) -> dict[str, Any]:
    """Book a fee or interest line: cash against `body.account`, dated the line's date."""
    line = tx.get(bank_statement_lines, line_id, "bank statement line")
    if line["kind"] not in BOOKABLE:
        hint = (" Record a returned payment through the payment (POST /payments/{id}/record-return)."
                if line["kind"] == "return" else " The books already hold it.")
        raise refused("not_bookable", f"Statement line {line_id} is a {line['kind']} line.{hint}", kind=line["kind"])
    done = booked_entry(tx, line_id)
    if done:
        raise refused("already_booked", f"Statement line {line_id} is already booked by {done}.", entry=done)
    bank = tx.get(bank_accounts, line["bank_account_id"], "bank account")
    acct = tx.find(ledger.accounts, id=body.account)
    if acct is None or not acct["active"]:
        raise invalid(f"Account {body.account} does not exist or is inactive.")
    if acct["control"]:
        raise refused("control_account", f"Account {body.account} ({acct['name']}) is a control account kept by the "
                                         f"{acct['control']} subledger; a bank item is not booked to it.")
    if acct["id"] == bank["gl_account_id"]:
        raise invalid(f"Account {body.account} is the bank account's own cash account; give the offsetting account.")
    tx.touch("bank_statement_line", line_id)
    memo = body.memo or f"{line['kind'].title()} {line['ref'] or ''}: {line['description'] or ''}".strip()
    ledger.post(tx, source=SOURCE, source_ref=line_ref(line_id), memo=memo, entry_date=line["date"],
                lines=[ledger.Line(bank["gl_account_id"], line["amount_cents"], memo, doc_ref=line_ref(line_id)),
                       ledger.Line(acct["id"], -line["amount_cents"], memo, doc_ref=line_ref(line_id))])
    return line_out(tx, tx.get(bank_statement_lines, line_id))
