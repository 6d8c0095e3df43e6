"""Transfers and adjustments: the inventory documents.

Adjustment lifecycle: posted at once — or, when the company sets an approval threshold and the
value is above it, ``pending_approval`` (nothing moves) until someone other than its preparer
approves it (``posted``: stock and value move on that day) or rejects it (``rejected``)."""
from __future__ import annotations

from typing import Any

from ...kernel.errors import invalid, not_found, refused
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from .. import ledger
from ..masterdata import get_item, lots
from ..org import company
from .schemas import AdjustmentIn, DecisionIn, TransferIn
from .stock import EPS, check_location, move, value_of
from .tables import ADJUST_REASONS, adjustments, transfers

#: The company setting (cents) above which an adjustment's value needs approval; unset: none does.
APPROVAL_SETTING = "inventory_adjustment_approval_cents"


def create_transfer(tx: Tx, body: TransferIn) -> dict[str, Any]:
    """Move stock; value moves with it, so no ledger entry is needed."""
    get_item(tx, body.item_id)
    check_location(tx, body.from_warehouse, body.from_location)
    check_location(tx, body.to_warehouse, body.to_location)
    if (body.from_warehouse, body.from_location) == (body.to_warehouse, body.to_location):
        raise invalid("The transfer's source and destination are the same.")
    qty = q4(body.qty)
    doc = tx.create_doc("transfer", transfers, "TRF", "posted", item_id=body.item_id, qty=qty,
                        lot_no=body.lot_no, from_warehouse=body.from_warehouse, from_location=body.from_location,
                        to_warehouse=body.to_warehouse, to_location=body.to_location, note=body.note)
    v = move(tx, item_id=body.item_id, warehouse_id=body.from_warehouse, location_id=body.from_location,
             lot_no=body.lot_no, qty=-qty, kind="transfer_out", doc_type="transfer", doc_id=doc["id"])
    move(tx, item_id=body.item_id, warehouse_id=body.to_warehouse, location_id=body.to_location,
         lot_no=body.lot_no, qty=qty, kind="transfer_in", doc_type="transfer", doc_id=doc["id"], value_cents=-v)
    return transfer_view(tx, doc["id"])


def create_adjustment(tx: Tx, body: AdjustmentIn) -> dict[str, Any]:
    """Change on-hand and post the value to the inventory adjustment account."""
    item = get_item(tx, body.item_id)
    check_location(tx, body.warehouse_id, body.location_id)
    if body.reason not in ADJUST_REASONS:
        raise invalid(f"reason must be one of {', '.join(ADJUST_REASONS)}.")
    qty = q4(body.qty)
    if abs(qty) < EPS:
        raise invalid("qty must not be zero.")
    if item["lot_controlled"] and not body.lot_no:
        raise invalid(f"{body.item_id} is lot-controlled: give lot_no.")
    if body.lot_no and tx.find(lots, item_id=body.item_id, lot_no=body.lot_no) is None:
        if qty < 0:
            raise not_found("lot", f"{body.item_id}/{body.lot_no}")
        tx.insert(lots, item_id=body.item_id, lot_no=body.lot_no, expiry=body.expiry,
                  first_received=tx.business_date)
    value = value_of(tx, body.item_id, qty)
    limit = approval_threshold_cents(tx)
    if limit is not None and abs(value) > limit:
        # Above the company's threshold: a request, not a posting (nothing moves until approved).
        doc = tx.create_doc("adjustment", adjustments, "ADJ", "pending_approval", item_id=body.item_id,
                            warehouse_id=body.warehouse_id, location_id=body.location_id, lot_no=body.lot_no,
                            qty=qty, value_cents=value, reason=body.reason, note=body.note)
        return adjustment_view(tx, doc["id"])
    doc = tx.create_doc("adjustment", adjustments, "ADJ", "posted", item_id=body.item_id,
                        warehouse_id=body.warehouse_id, location_id=body.location_id, lot_no=body.lot_no,
                        qty=qty, value_cents=value, reason=body.reason, note=body.note)
    _post_adjustment(tx, doc)
    return adjustment_view(tx, doc["id"])


def _post_adjustment(tx: Tx, doc: dict[str, Any]) -> None:
    """Move the stock and post the value of an adjustment (its status already says posted)."""
    move(tx, item_id=doc["item_id"], warehouse_id=doc["warehouse_id"], location_id=doc["location_id"],
         lot_no=doc["lot_no"], qty=doc["qty"], kind="adjustment", doc_type="adjustment", doc_id=doc["id"],
         value_cents=doc["value_cents"])
    value = doc["value_cents"]
    je = ledger.post(tx, source="inventory", source_ref=doc["id"], memo=f"Inventory adjustment {doc['id']} ({doc['reason']})",
                     lines=[ledger.Line("rule:inventory", value, party_type="item", party_id=doc["item_id"],
                                        doc_ref=doc["id"]),
                            ledger.Line("rule:inventory_adjustment", -value, doc_ref=doc["id"])])
    tx.update(adjustments, doc["id"], je_id=je or None)


def approval_threshold_cents(tx: Tx) -> int | None:
    """The value (cents, either sign) above which an adjustment waits for approval: the company
    setting `inventory_adjustment_approval_cents`; None (no approval step) when it is not set."""
    row = tx.find(company, key=APPROVAL_SETTING)
    return int(row["value"]) if row and str(row["value"]).strip().isdigit() else None


def _pending(tx: Tx, doc_id: str) -> dict[str, Any]:
    doc = tx.get(adjustments, doc_id, "adjustment")
    if doc["status"] != "pending_approval":
        raise refused("bad_status", f"Adjustment {doc_id} is {doc['status']}; only one pending approval can be "
                                    "approved or rejected.", status=doc["status"])
    return doc


def approve_adjustment(tx: Tx, doc_id: str, body: DecisionIn | None) -> dict[str, Any]:
    """Approve a pending adjustment (not its preparer): its stock moves and its value posts today,
    at today's standard cost."""
    doc = _pending(tx, doc_id)
    if doc["created_by"] == tx.actor.user_id:
        raise refused("preparer_cannot_approve", f"You prepared adjustment {doc_id}; someone else must approve it.")
    value = value_of(tx, doc["item_id"], doc["qty"])
    tx.set_status("adjustment", adjustments, doc_id, "posted", (body.note if body else None) or "approved",
                  allowed_from=["pending_approval"], value_cents=value)
    _post_adjustment(tx, {**doc, "value_cents": value})
    return adjustment_view(tx, doc_id)


def reject_adjustment(tx: Tx, doc_id: str, body: DecisionIn | None) -> dict[str, Any]:
    """Reject a pending adjustment: nothing moves (a recount, say, is the next step)."""
    _pending(tx, doc_id)
    tx.set_status("adjustment", adjustments, doc_id, "rejected", (body.note if body else None) or "rejected",
                  allowed_from=["pending_approval"])
    return adjustment_view(tx, doc_id)


def transfer_view(tx: Tx, doc_id: str) -> dict[str, Any]:
    """A transfer with its history."""
    row = tx.get(transfers, doc_id, "transfer")
    return {**row, "history": tx.history("transfer", doc_id), "links": {}}


def adjustment_view(tx: Tx, doc_id: str) -> dict[str, Any]:
    """An adjustment with its value, history and journal link."""
    row = tx.get(adjustments, doc_id, "adjustment")
    out = {k: v for k, v in row.items() if k != "value_cents"}
    return {**out, "value": from_cents(row["value_cents"]), "history": tx.history("adjustment", doc_id),
            "links": {"journal_entry": [row["je_id"]] if row["je_id"] else []}}
