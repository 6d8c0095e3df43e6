"""Whether an invoice is disputed: an active dispute hold, or an open dispute vendor request
that names the invoice (by our id, or by the vendor and its invoice number)."""
from __future__ import annotations

from sqlalchemy import and_, bindparam, or_, select

from ...kernel.tx import Tx
from ..purchasing.tables import vendor_requests as vr
from .tables import ap_invoices, holds

#: Vendor-request statuses after which a dispute no longer counts.
_DISPUTE_CLOSED = ("closed", "resolved", "cancelled", "withdrawn", "answered", "rejected", "credited", "refused",
                   "done")


def _dispute_is_open(row: dict) -> bool:
    return (row.get("status") or "open") not in _DISPUTE_CLOSED


def is_disputed(tx: Tx, invoice_id: str) -> bool:
    """True when the invoice has an active dispute hold or an open dispute vendor request."""
    if tx.one(select(holds.c.id).where(holds.c.invoice_id == invoice_id, holds.c.reason == "dispute",
                                       holds.c.status == "active")):
        return True
    conds = [vr.c.ap_invoice_id == invoice_id]
    inv = tx.find(ap_invoices, id=invoice_id)
    if inv is not None:
        # A dispute may name the vendor's invoice number instead of our id.
        conds.append(and_(vr.c.vendor_id == inv["vendor_id"], vr.c.invoice_no == inv["invoice_no"]))
    stmt = select(vr).where(vr.c.kind == "dispute", or_(*conds))
    return any(_dispute_is_open(row) for row in tx.all(stmt))


def disputed_invoice_ids(tx: Tx, invoices: list[dict]) -> set[str]:
    """The ids among `invoices` (ap_invoices rows) that `is_disputed` would call disputed, in two
    queries whatever the count: active dispute holds, then dispute vendor requests naming one of
    the ids or one of the (vendor, invoice number) pairs, matched back to invoices in Python."""
    ids = [inv["id"] for inv in invoices]
    if not ids:
        return set()
    out = {r["invoice_id"] for r in tx.all(_PAGE_DISPUTE_HOLDS, {"ids": ids})}   # tx.all: on the driver
    by_pair: dict[tuple[str, str], list[str]] = {}
    for inv in invoices:
        by_pair.setdefault((inv["vendor_id"], inv["invoice_no"]), []).append(inv["id"])
    wanted = set(ids)
    params = {"ids": ids, "vendors": sorted({v for v, _ in by_pair}), "numbers": sorted({n for _, n in by_pair})}
    for row in tx.all(_PAGE_DISPUTE_REQUESTS, params):
        if not _dispute_is_open(row):
            continue
        if row["ap_invoice_id"] in wanted:
            out.add(row["ap_invoice_id"])
        out.update(by_pair.get((row["vendor_id"], row["invoice_no"]), ()))
    return out


# Built once with expanding parameters: built per page, each statement coerced every id of its
# IN lists and was keyed anew (most of a list read's time).
_PAGE_DISPUTE_HOLDS = select(holds.c.invoice_id).where(
    holds.c.invoice_id.in_(bindparam("ids", expanding=True)), holds.c.reason == "dispute", holds.c.status == "active")
# The pair condition is a superset (vendor in page AND number in page); exact pairs in Python.
_PAGE_DISPUTE_REQUESTS = select(vr).where(vr.c.kind == "dispute", or_(
    vr.c.ap_invoice_id.in_(bindparam("ids", expanding=True)),
    and_(vr.c.vendor_id.in_(bindparam("vendors", expanding=True)),
         vr.c.invoice_no.in_(bindparam("numbers", expanding=True)))))
