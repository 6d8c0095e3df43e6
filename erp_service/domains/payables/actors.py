"""What a manager can do about an escalated invoice (actions of the world's escalation
rules, registered with comms): release its holds, approve it. Each acts as the addressee
through an ordinary audited write."""
from __future__ import annotations

from typing import Any

from ..comms import register_escalation_action
from .service import NoteIn, active_holds, approve_invoice, release_hold


def _invoice_of(esc: dict[str, Any], spec: dict) -> str | None:
    # A named invoice, else the escalated record when it is an invoice.
    if spec.get("invoice_id"):
        return spec["invoice_id"]
    return esc["record_id"] if esc["record_type"] == "ap_invoice" else None


def _release_hold(day, user_id: str, esc: dict, spec: dict) -> None:
    """Release the named hold (``hold_id``), the escalated hold, or every active hold of the
    escalated invoice (only those with ``hold_reason`` when given)."""
    note = NoteIn(note=spec.get("note") or f"released on escalation {esc['id']}")
    if spec.get("hold_id") or esc["record_type"] == "hold":
        hold_ids = [spec.get("hold_id") or esc["record_id"]]
    else:
        invoice_id = _invoice_of(esc, spec)
        if invoice_id is None:
            raise RuntimeError(f"release_hold on escalation {esc['id']}: no invoice or hold to act on")
        hold_ids = [h["id"] for h in day.look(lambda tx: active_holds(tx, invoice_id))
                    if spec.get("hold_reason") in (None, h["reason"])]
    for hold_id in hold_ids:
        day.act(user_id, "ap.release_hold", f"/holds/{hold_id}/release", note.model_dump(),
                lambda tx, hold_id=hold_id: release_hold(tx, hold_id, note))


def _approve_invoice(day, user_id: str, esc: dict, spec: dict) -> None:
    """Approve the escalated (or named) AP invoice."""
    invoice_id = _invoice_of(esc, spec)
    if invoice_id is None:
        raise RuntimeError(f"approve_invoice on escalation {esc['id']}: no invoice to act on")
    day.act(user_id, "ap.approve", f"/ap-invoices/{invoice_id}/approve", None,
            lambda tx: approve_invoice(tx, invoice_id))



register_escalation_action("release_hold", _release_hold)
register_escalation_action("approve_invoice", _approve_invoice)
