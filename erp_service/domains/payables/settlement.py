"""How much of an invoice is settled: the one rule, owned by payments and reached here
through a registration (payments sits above payables: it pays invoices).

`payments.settlement` registers a `Settlement` at import; payables asks it for the cash plus
discount applied to invoices by released (or cleared) payments, and for the payments that
touch an invoice. Without a registration every question is an error, never "nothing settled".
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Settlement:
    """What payables needs to know about payments of its invoices (`conn`: a connection or Tx)."""

    #: cash + discount applied to one invoice by released/cleared payments (released by `as_of`)
    settled_cents: Callable[[Any, str, str | None], int]
    #: the same for many invoices at once (absent ids: nothing settled)
    settled_cents_by_invoice: Callable[[Any, list[str]], dict[str, int]]
    #: the same over every invoice (the paid side of the ap subledger)
    settled_total_cents: Callable[[Any, str | None], int]
    #: the payments (any status) allocated to an invoice, for its detail view
    invoice_payments: Callable[[Any, str], list[dict]]
    #: a proposed or made payment of the invoice (blocks voiding), or None
    live_payment: Callable[[Any, str], dict | None]


_REGISTERED: list[Settlement] = []


def register_settlement(settlement: Settlement) -> None:
    """Install the settlement rule (payments does, once)."""
    _REGISTERED[:] = [settlement]


def settlement() -> Settlement:
    """The installed settlement rule."""
    if not _REGISTERED:
        raise RuntimeError("no settlement rule registered: erp_service.domains.payments is not imported")
    return _REGISTERED[0]


def open_cents_of(inv: dict, settled: int) -> int:
    """What is still owed on an invoice given what is settled (0 for rejected and voided ones)."""
    if inv["status"] in ("rejected", "voided"):
        return 0
    return inv["total_cents"] - settled


def open_cents(conn: Any, inv: dict) -> int:
    """What is still owed on an invoice (0 for rejected and voided ones)."""
    if inv["status"] in ("rejected", "voided"):
        return 0
    return open_cents_of(inv, settlement().settled_cents(conn, inv["id"], None))
