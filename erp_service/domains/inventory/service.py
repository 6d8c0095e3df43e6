"""Transfers and adjustments: the inventory documents."""
from __future__ import annotations

from typing import Any

from ...kernel.errors import invalid, not_found
from ...kernel.money import from_cents, q4
from ...kernel.tx import Tx
from .. import ledger
from ..masterdata import get_item, lots
from .schemas import AdjustmentIn, TransferIn
from .stock import EPS, check_location, move, value_of
from .tables import ADJUST_REASONS, adjustments, transfers


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
    doc = tx.create_doc("adjustment", adjustments, "ADJ", "posted", item_id=body.item_id,
                        warehouse_id=body.warehouse_id, location_id=body.location_id, lot_no=body.lot_no,
                        qty=qty, value_cents=value, reason=body.reason, note=body.note)
    move(tx, item_id=body.item_id, warehouse_id=body.warehouse_id, location_id=body.location_id,
         lot_no=body.lot_no, qty=qty, kind="adjustment", doc_type="adjustment", doc_id=doc["id"], value_cents=value)
    je = ledger.post(tx, source="inventory", source_ref=doc["id"], memo=f"Inventory adjustment {doc['id']} ({body.reason})",
                     lines=[ledger.Line("rule:inventory", value, party_type="item", party_id=body.item_id,
                                        doc_ref=doc["id"]),
                            ledger.Line("rule:inventory_adjustment", -value, doc_ref=doc["id"])])
    tx.update(adjustments, doc["id"], je_id=je or None)
    return adjustment_view(tx, doc["id"])


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
