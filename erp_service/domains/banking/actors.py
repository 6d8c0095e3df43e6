"""The bank's own statement items (`@actor("bank")`), from ``world["bank_items"]``.

Every workday the bank posts each item dated on or before today that is not on the statement
yet (by its `ref`): fees as withdrawals, interest as deposits, and a returned payment as a
deposit of the payment's cash amount once that payment has cleared (until then it waits). The
company's books do not move: recording these is the company's work (`book_line`,
`payments.record_return`). What the bank sent is also recorded in the sim log.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from sqlalchemy import select

from ...kernel.errors import invalid, refused
from ...kernel.money import to_cents
from ...kernel.tx import Tx
from ...sim import Day, actor
from .tables import bank_accounts, bank_statement_lines

#: Statement-line kind of each item kind, and the sign of its amount.
LINE_KIND = {"fee": ("fee", -1), "interest": ("interest", 1), "return": ("return", 1)}

#: fn(tx, payment_id) -> the cash amount (cents) of a payment the bank can return (it has
#: cleared), else None. Payments registers it (payments imports banking, not the reverse).
ReturnableFn = Callable[[Tx, str], int | None]
_RETURNABLE: list[ReturnableFn] = []


def register_returnable(fn: ReturnableFn) -> None:
    """Install how the bank learns whether a payment has cleared and for how much."""
    _RETURNABLE[:] = [fn]


def _returnable(tx: Tx, payment_id: str | None) -> int | None:
    if not _RETURNABLE:
        raise RuntimeError("no payment lookup registered: erp_service.domains.payments is not imported")
    return _RETURNABLE[0](tx, payment_id) if payment_id else None


def _account(tx: Tx, wanted: str | None) -> str:
    if wanted:
        if tx.find(bank_accounts, id=wanted) is None:
            raise invalid(f"Bank account {wanted} does not exist.")
        return wanted
    row = tx.one(select(bank_accounts.c.id).order_by(bank_accounts.c.id).limit(1))
    if row is None:
        raise invalid("The company has no bank account.")
    return str(row["id"])


def post_item(tx: Tx, item: dict[str, Any]) -> dict[str, Any]:
    """Write one bank-originated statement line (refused if its ref is already there)."""
    kind, sign = LINE_KIND[item["kind"]]
    if tx.find(bank_statement_lines, ref=item["ref"], kind=kind) is not None:
        raise refused("already_posted", f"Bank item {item['ref']} is already on the statement.")
    account = _account(tx, item.get("bank_account_id"))
    payment_id = item.get("payment_id")
    if kind == "return":
        returnable = _returnable(tx, payment_id)
        if returnable is None:
            raise refused("not_cleared", f"Payment {payment_id} has not cleared; the bank cannot return it.")
        cents = returnable
    else:
        cents = to_cents(item["amount"])
    row = tx.insert(bank_statement_lines, bank_account_id=account, date=tx.business_date, amount_cents=sign * cents,
                    kind=kind, ref=item["ref"], description=item["description"], payment_id=payment_id)
    return {"line": row["id"], "kind": kind, "ref": item["ref"], "amount_cents": sign * cents}


def _due(tx: Tx, items: list[dict[str, Any]], today: str) -> list[dict[str, Any]]:
    out = []
    for item in items:
        kind = LINE_KIND[item["kind"]][0]
        if item["on"] > today or tx.find(bank_statement_lines, ref=item["ref"], kind=kind) is not None:
            continue
        if kind == "return" and _returnable(tx, item["payment_id"]) is None:
            continue   # the return comes after the payment clears
        out.append(item)
    return out


@actor("bank")
def bank_posts_own_items(day: Day) -> None:
    """Post the fees, interest and returned payments that are due (see the module docstring)."""
    items = day.world.section("bank_items", [])
    if not items:
        return
    actors = day.world.section("actors")
    user = actors.get("bank", "sys-bank") if isinstance(actors, dict) else "sys-bank"
    for item in day.look(lambda tx: _due(tx, items, day.date)):
        out = day.act(user, "bank.post", f"/bank-statement-lines ({item['ref']})", item, partial(post_item, item=item))
        if out is not None:
            day.log("bank", f"statement_{item['kind']}", item["ref"], out)
