"""The manager actor: answers open escalations by the world's rules, with the actions other
domains register (`register_escalation_action`)."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from sqlalchemy import select

from ...kernel.errors import refused
from ...kernel.identity import load_actor, users
from ...kernel.tx import Tx
from ...sim import Day, actor
from ..org import on_leave
from ..roles import readable_boxes
from .mail import deliver
from .tables import escalations

ManagerAction = Callable[[Any, str, dict, dict], None]


ESCALATION_ACTIONS: dict[str, ManagerAction] = {}


def register_escalation_action(kind: str, handler: ManagerAction) -> None:
    """Teach the manager actor an action kind (e.g. payables registers ``release_hold``).

    The handler runs as the escalation's addressee and must act only through
    ``day.act(user_id, action_code, path, body, fn)`` so the action is audited like any other."""
    ESCALATION_ACTIONS[kind] = handler


def _rules(world: Any) -> list[dict]:
    section = world.section("escalations", [])
    if isinstance(section, dict):
        section = section.get("rules", [])
    return list(section or [])


def matching_rule(rules: list[dict], esc: dict[str, Any]) -> dict | None:
    """The first rule that matches the escalation's record, reason and addressee."""
    for rule in rules:
        if rule.get("record_id", "*") not in ("*", esc["record_id"]):
            continue
        if rule.get("record_type") not in (None, "*", esc["record_type"]):
            continue
        if rule.get("reason") not in ("*", esc["reason"]):   # the reason code must match
            continue
        if rule.get("to") not in (None, esc["to_user"]):
            continue
        return rule
    return None


def _reply_box(conn, user_id: str) -> str:
    actor = load_actor(conn, user_id)
    boxes = readable_boxes(actor) if actor else []
    return boxes[0] if boxes else "general"


def _answer(esc: dict[str, Any], rule: dict, manager: str) -> Callable[[Tx], Any]:
    def fn(tx: Tx) -> dict[str, Any]:
        current = tx.get(escalations, esc["id"], "escalation")
        if current["status"] != "open":
            raise refused("bad_status", f"escalation {esc['id']} is {current['status']}.")
        reply_id = None
        for spec in rule.get("actions", []):
            if spec.get("kind") != "reply":
                continue
            me = tx.find(users, id=manager) or {}
            box = spec.get("box") or _reply_box(tx.conn, esc["created_by"])
            msg = deliver(tx, box, me.get("email") or manager,
                          spec.get("subject") or f"Re: {esc['record_type']} {esc['record_id']} ({esc['reason']})",
                          spec.get("body") or rule.get("decision") or "", to=esc["created_by"],
                          related_type=esc["record_type"], related_id=esc["record_id"])
            reply_id = reply_id or msg["id"]
        tx.set_status("escalation", escalations, esc["id"], "answered", rule.get("decision") or "answered",
                      allowed_from=["open"], answered_on=tx.business_date, answered_by=manager,
                      decision=rule.get("decision"), reply_id=reply_id)
        return {"id": esc["id"], "reply_id": reply_id}
    return fn


@actor("managers")
def _managers(day: Day) -> None:
    """Answer open escalations from before today by the world's rules, in id order (an
    addressee on leave answers when back)."""
    rules = _rules(day.world)
    if not rules:
        return
    open_rows = day.look(lambda tx: tx.all(select(escalations).where(
        escalations.c.status == "open", escalations.c.created_on < day.date).order_by(escalations.c.id)))
    for esc in open_rows:
        rule = matching_rule(rules, esc)
        if rule is None:
            continue
        manager = esc["to_user"]
        if day.look(partial(on_leave, user_id=manager, day=day.date)):
            continue   # the addressee answers when back from leave
        for spec in rule.get("actions", []):
            kind = spec.get("kind")
            if kind in ("reply", "keep_hold", "none", None):
                continue
            handler = ESCALATION_ACTIONS.get(kind)
            if handler is None:
                raise RuntimeError(f"world escalation rule uses unknown action {kind!r}; "
                                   f"known: {', '.join(sorted(ESCALATION_ACTIONS)) or 'reply, keep_hold, none'}")
            handler(day, manager, esc, spec)
        day.act(manager, "escalation.answer", f"/escalations/{esc['id']}/answer",
                {"decision": rule.get("decision")}, _answer(esc, rule, manager), permission="escalate")
