"""Escalations: a record sent to a named person with a reason code."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from ...kernel.errors import invalid, not_found
from ...kernel.identity import users
from ...kernel.tx import OBJECTS, Tx
from .schemas import EscalationIn
from .tables import escalations


def _record_exists(tx: Tx, record_type: str, record_id: str) -> bool | None:
    ot = OBJECTS.get(record_type)
    if ot is None:
        return None
    pk = list(ot.table.primary_key.columns)[0]
    return tx.one(select(pk).where(pk == record_id)) is not None


def escalate(tx: Tx, body: EscalationIn) -> dict[str, Any]:
    """Escalate a record to a named person with a reason code."""
    known = _record_exists(tx, body.record_type, body.record_id)
    if known is None:
        raise invalid(f"Unknown record_type {body.record_type!r}; known types: {', '.join(sorted(OBJECTS))}.")
    if not known:
        raise not_found(body.record_type, body.record_id)
    target = tx.find(users, id=body.to)
    if target is None or target["kind"] != "staff" or not target["active"]:
        raise invalid(f"{body.to!r} is not an active staff user; escalate to a person by user id.")
    if body.to == tx.actor.user_id:
        raise invalid("You cannot escalate to yourself.")
    row = tx.create_doc("escalation", escalations, "ESC", "open", record_type=body.record_type,
                        record_id=body.record_id, to_user=body.to, reason=body.reason, note=body.note)
    return escalation_view(tx, tx.get(escalations, row["id"]))


def escalation_view(tx: Tx, row: dict[str, Any]) -> dict[str, Any]:
    """An escalation with its history."""
    out = {k: row[k] for k in ("id", "status", "record_type", "record_id", "to_user", "reason", "note",
                               "created_by", "created_on", "answered_on", "answered_by", "decision", "reply_id")}
    out["history"] = tx.history("escalation", row["id"])
    return out
