"""The GRNI report."""
from __future__ import annotations

import datetime as dt
from typing import Any

from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ..reports import AsOfParams, as_of_of, register_report
from .ledger import grni_lines


class GrniParams(AsOfParams):
    vendor_id: str | None = None
    po_id: str | None = None


def grni_report(tx: Tx, params: GrniParams) -> dict[str, Any]:
    """Goods received not invoiced, per PO line, as of a date, with age since first receipt."""
    as_of = as_of_of(tx, params)
    rows = []
    for r in grni_lines(tx, as_of=as_of, vendor_id=params.vendor_id, po_id=params.po_id):
        age = (dt.date.fromisoformat(as_of) - dt.date.fromisoformat(r["first_received"])).days \
            if r["first_received"] else None
        rows.append({"po_id": r["po_id"], "po_line": r["po_line"], "vendor_id": r["vendor_id"],
                     "item_id": r["item_id"], "unit_price": r["unit_price"],
                     "received": from_cents(r["received_cents"]), "invoiced": from_cents(r["invoiced_cents"]),
                     "open": from_cents(r["open_cents"]), "first_received": r["first_received"], "age_days": age})
    total = sum(r["open_cents"] for r in grni_lines(tx, as_of=as_of, vendor_id=params.vendor_id, po_id=params.po_id))
    return {"as_of": as_of, "rows": rows, "total": from_cents(total)}


register_report("grni", grni_report, GrniParams, title="Goods received not invoiced")
