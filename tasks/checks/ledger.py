"""Ledger checks: the books balance and the control accounts tie to their subledgers."""
from __future__ import annotations

from typing import Literal

from tasks.checks.base import CheckBase


class LedgerTiesCheck(CheckBase):
    """The trial balance balances and each named control account equals its subledger."""

    type: Literal["ledger_ties"]
    accounts: list[str] | None = None
