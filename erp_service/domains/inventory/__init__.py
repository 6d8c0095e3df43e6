"""Inventory: every stock movement is a row of `inventory_txns`; on-hand is their sum, never
stored and never negative. Transfers and adjustments are documents; receipts, work orders and
shipments move stock through `move` / `issue_fefo` here.

Stock is valued at standard cost: each transaction carries the value it added to (or took
from) the inventory control account, so the `inventory` subledger is the sum of those values.
"""
from __future__ import annotations

from . import ledger, reports  # noqa: F401  (the inventory subledger and the reports)
from .routes import router
from .schemas import AdjustmentIn
from .service import create_adjustment
from .stock import EPS, balance, check_location, issue_fefo, move, value_of
from .tables import inventory_txns

__all__ = ["router", "AdjustmentIn", "EPS", "balance", "check_location", "create_adjustment",
           "inventory_txns", "issue_fefo", "move", "value_of"]
