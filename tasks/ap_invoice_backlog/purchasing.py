"""The month of purchasing after history: purchase orders sent and goods received while nobody
entered an invoice, so that every backlog invoice bills a real order and a real receipt.

A `PoPlan` is one order: its lines, the day it is sent and the days its goods arrive. The
generator plays the plans day by day through the ERP's routes (the buyer orders, the purchasing
manager approves what is above the buyer's limit, the receiver posts the receipts); the order's
id and line numbers are known from then on, and the invoices render with them.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.northgate.api import InProcessErp
    from tasks.northgate.catalog import Item

BUYER, PUR_MGR, RECEIVER = "ethan.wright", "maya.chen", "luis.ortega"
BUYER_LIMIT = 10_000.0
WAREHOUSE = "WH-MAIN"


@dataclass
class PoLine:
    """One ordered line: a stock item, or a described MRO supply coded to an account."""

    description: str
    qty: float
    price: float
    item: Item | None = None
    account: str | None = None


@dataclass
class Receipt:
    """Goods of a PO arriving on `day`: quantity per line index (posted at generation, or by the
    world's scheduled receipts after the start)."""

    day: str
    qty: dict[int, float]
    scheduled: bool = False
    id: str | None = None


@dataclass
class PoPlan:
    """One purchase order of the month and what becomes of it."""

    vendor: str
    day: str
    lines: list[PoLine]
    receipts: list[Receipt] = field(default_factory=list)
    id: str | None = None
    line_nos: list[int] = field(default_factory=list)

    @property
    def value(self) -> float:
        return round(sum(ln.qty * ln.price for ln in self.lines), 2)

    def receive(self, day: str, qty: dict[int, float] | None = None, *, scheduled: bool = False) -> Receipt:
        """Plan a receipt (everything ordered when `qty` is None)."""
        r = Receipt(day, qty if qty is not None else {i: ln.qty for i, ln in enumerate(self.lines)},
                    scheduled=scheduled)
        self.receipts.append(r)
        return r


def place(erp: InProcessErp, po: PoPlan) -> None:
    """Create and send the order (the purchasing manager approves above the buyer's limit)."""
    lines: list[dict[str, Any]] = []
    for ln in po.lines:
        body: dict[str, Any] = {"qty": ln.qty, "unit_price": ln.price}
        if ln.item is not None:
            body["item_id"] = ln.item.id
        else:
            body.update({"description": ln.description, "account_id": ln.account})
        lines.append(body)
    out = erp.post(BUYER, "/purchase-orders", {"vendor_id": po.vendor, "warehouse_id": WAREHOUSE, "lines": lines})
    if po.value > BUYER_LIMIT:
        erp.post(PUR_MGR, f"/purchase-orders/{out['id']}/approve", {"note": "Within the plan for the month"})
    erp.post(BUYER, f"/purchase-orders/{out['id']}/send")
    po.id = str(out["id"])
    po.line_nos = [int(ln["line_no"]) for ln in out["lines"]]


def receipt_body(po: PoPlan, r: Receipt) -> dict[str, Any]:
    """The receipt the receiver posts: lot and expiry for lot-controlled items."""
    assert po.id is not None, "the order is placed before its goods arrive"
    lines = []
    for i, qty in sorted(r.qty.items()):
        ln = po.lines[i]
        entry: dict[str, Any] = {"po_line": po.line_nos[i], "qty_received": qty}
        if ln.item is not None and ln.item.lot_controlled:
            entry["lot_no"] = f"L{r.day[2:].replace('-', '')}{po.line_nos[i]}{po.id[-3:]}"
            entry["expiry"] = (dt.date.fromisoformat(r.day) + dt.timedelta(days=ln.item.shelf_life_days)).isoformat()
        lines.append(entry)
    slip = f"PS-{po.vendor[2:]}-{po.id[-4:]}-{r.day[5:].replace('-', '')}"
    return {"po_id": po.id, "warehouse_id": WAREHOUSE, "packing_slip": slip, "lines": lines}


def post_receipt(erp: InProcessErp, po: PoPlan, r: Receipt) -> None:
    """The receiver posts the receipt today."""
    out = erp.post(RECEIVER, "/receipts", receipt_body(po, r))
    r.id = str(out["id"])


def scheduled_receipt(po: PoPlan, r: Receipt) -> dict[str, Any]:
    """The world's `receipts[]` entry that posts `r` on its day, between turns."""
    return {"date": r.day, "user": RECEIVER, **receipt_body(po, r)}
