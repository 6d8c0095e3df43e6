"""The audit log as the caller may read it: one event decoded, and the caller's page of events."""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from ...kernel.listing import PageRequest, paginate
from ...kernel.schema import audit_events
from ...kernel.tx import Tx


def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def event_view(row: dict[str, Any]) -> dict[str, Any]:
    """One audit event with its images and request decoded."""
    out = {k: row[k] for k in ("id", "business_date", "wall_time", "channel", "actor", "token_id", "method",
                               "path", "action", "object_type", "object_id", "outcome", "status",
                               "error_code", "idem_key")}
    out["replay"] = bool(row["replay"])
    out["before"] = _loads(row["before"])
    out["after"] = _loads(row["after"])
    out["request"] = _loads(row["request"])
    return out


def list_audit(tx: Tx, page: PageRequest, *, actor: str | None, action: str | None, object_id: str | None,
               object_type: str | None, outcome: str | None, since_id: int | None) -> dict[str, Any]:
    """Audit events, oldest first; only the caller's own unless they hold ``audit.read``."""
    stmt = select(audit_events).where(audit_events.c.channel != "setup")
    if not tx.actor.can("audit.read"):
        stmt = stmt.where(audit_events.c.actor == tx.actor.user_id)
    if since_id is not None:
        stmt = stmt.where(audit_events.c.id > since_id)
    return paginate(tx, stmt.order_by(audit_events.c.id), page, render=event_view, actor=actor, action=action,
                    object_id=object_id, object_type=object_type, outcome=outcome)
