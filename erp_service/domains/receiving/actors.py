"""The vendors' scheduled receipts and reversals (a counterparty on the clock)."""
from __future__ import annotations

from ...sim import actor
from .schemas import ReceiptIn, ReverseIn
from .service import post_receipt, reverse_receipt


@actor("vendors")
def scheduled_receipts(day) -> None:
    """Post the receipts and reversals the scenario schedules for this day, as the named user."""
    for n, spec in enumerate(day.world.section("receipts", [])):
        if spec.get("date") != day.date:
            continue
        user = spec.get("user") or spec.get("by") or "receiver"
        body = {k: spec[k] for k in ("po_id", "warehouse_id", "packing_slip", "note", "lines") if k in spec}
        try:
            model = ReceiptIn.model_validate(body)
        except Exception as exc:
            raise RuntimeError(f"world receipts[{n}] is not a valid receipt: {exc}") from exc
        day.act(user, "rcv.post", "/receipts", body, lambda tx, m=model: post_receipt(tx, m))
    for spec in day.world.section("receipt_reversals", []):
        if spec.get("date") != day.date:
            continue
        user = spec.get("user") or "receiver"
        body = {"reason": spec.get("reason") or "scheduled reversal"}
        rid = spec["receipt_id"]
        day.act(user, "rcv.reverse", f"/receipts/{rid}/reverse", body,
                lambda tx, r=rid, b=ReverseIn(**body): reverse_receipt(tx, r, b))
