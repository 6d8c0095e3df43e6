"""Twelve months of Northgate history, played through the ERP's routes with the reference
policies and the clock advanced day by day so the counterparties act:

- supply (`supply.py`): the buyer reviews stock weekly and orders by vendor, the receiver
  receives what arrives (lots and expiry for seals and gaskets), AP enters, validates and
  approves each vendor invoice, and a payment run every fourth Friday pays what falls due
  before the next one (discounts taken while open) — the controller approves and releases it
  and the bank clears it (counterparties);
- orders (`orders.py`): customers order by a seeded stream, order entry enters the orders (the
  credit check holds some; the credit manager releases them), shipping ships what stock allows
  first-expiry-first and bills each shipment, customers pay by their profile — on time, late,
  short, a wrong reference, a parent for its subsidiary (counterparties) — and the AR clerk
  applies the cash;
- the plant (`plant.py`): the planner opens work orders for trims and valves when stock runs
  low, the supervisor releases them, issues the components, reports completions and closes;
- month end (`month_end.py`): service bills without a PO, payroll and depreciation by journal
  entry (prepared, approved, posted), and the line-of-credit rule.

The day loop that calls them is `run_history` in `build.py`; this module holds what they share
(the clerks' names, the `History` notes, the day helpers), so none of them imports the loop.

Every posting comes from a real document, so every control account ties on the first day.
Vendors stay silent during history (the clerks receive and bill as the documents arrive);
counterparties of the task's own world act from its first turn.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from .api import InProcessErp
from .company import Northgate
from .people import CONTROLLER
from .stock import Stock

BUYER, PUR_MGR, RECEIVER, AP_CLERK, AP_SUP = "ethan.wright", "maya.chen", "luis.ortega", "riley.park", "hannah.brooks"
ORDER_ENTRY, SHIPPING, CREDIT, AR_CLERK = "marco.rossi", "aisha.bello", "victor.hale", "sara.lindqvist"
PLANNER, PROD_SUP, ACCOUNTANT = "jordan.lee", "ines.costa", "omar.haddad"


def history_world(ng: Northgate) -> dict[str, Any]:
    """The counterparties during history: the controller approves payment runs the next
    workday and releases them, customers pay by their profiles, vendors are silent."""
    return {
        "payment_run_approver": {"user": CONTROLLER, "approve_after_days": 1, "release": True},
        "vendor_default": {"silent": True},
        "customers": {c.id: dict(c.pays or {}) for c in ng.customers},
    }


def days(first: str, last: str):
    """ISO dates from `first` to `last` inclusive."""
    d = dt.date.fromisoformat(first)
    end = dt.date.fromisoformat(last)
    while d <= end:
        yield d.isoformat()
        d += dt.timedelta(days=1)


def add_days(day: str, n: int) -> str:
    """`day` plus `n` calendar days."""
    return (dt.date.fromisoformat(day) + dt.timedelta(days=n)).isoformat()


@dataclass
class History:
    """What the history's clerks know between days (their own notes, not the ERP's state)."""

    ng: Northgate
    erp: InProcessErp
    start: str
    end: str
    last_order: str | None
    today: str = ""
    workdays: list[str] = field(default_factory=list)
    stock: Stock = field(default_factory=Stock)
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def rng(self):
        """The company's seeded random stream (one stream: the order of use is the plan)."""
        return self.ng.rng

    def weekday(self) -> int:
        """Monday = 0."""
        return dt.date.fromisoformat(self.today).weekday()

    def workdays_since(self, day: str) -> int:
        """Workdays after `day` up to and including today."""
        return sum(1 for d in self.workdays if day < d <= self.today)

    def call(self, user: str, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One request as `user`."""
        return self.erp.call(user, method, path, body, **params)
