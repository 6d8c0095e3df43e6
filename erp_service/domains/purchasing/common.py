"""What purchasing's parts share: constants, line amounts, the vendor checks, the vendor-request
hook registry, and the money view of a row."""
from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ...kernel.errors import refused
from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ..vendors import vendors

EPS = 1e-9


OPEN_PO = ("sent", "partially_received")


REQUEST_KINDS = ("expedite", "defer", "cancel", "dispute", "copy_request")


VENDOR_REQUEST_HOOKS: list[Callable[[Tx, dict[str, Any]], None]] = []


def register_vendor_request_hook(fn: Callable[[Tx, dict[str, Any]], None]) -> None:
    """Run `fn(tx, vendor_request)` whenever a vendor request is created (same transaction)."""
    VENDOR_REQUEST_HOOKS.append(fn)


def line_cents(qty: float, price: float) -> int:
    """Extended amount of a line in cents, rounded half up."""
    return int((Decimal(str(qty)) * Decimal(str(price)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def vendor_row(tx: Tx, vendor_id: str) -> dict[str, Any]:
    """The vendor (table `vendors`, owned by the vendors domain), or 404."""
    return tx.get(vendors, vendor_id, "vendor")


def require_active_vendor(tx: Tx, vendor_id: str) -> dict[str, Any]:
    """The vendor, refused with vendor_inactive unless its status is active."""
    v = vendor_row(tx, vendor_id)
    if v.get("status") != "active":
        raise refused("vendor_inactive", f"Vendor {vendor_id} is {v.get('status')}; no new orders can be placed.",
                      vendor_id=vendor_id)
    return v


def money_view(row: dict[str, Any], *cols: str) -> dict[str, Any]:
    """The row as shown: `cols` (cents) as 2-dp money under their names without `_cents`."""
    out = dict(row)
    for c in cols:
        out[c.removesuffix("_cents")] = from_cents(out.pop(c))
    out.pop("created_wall", None)
    return out

