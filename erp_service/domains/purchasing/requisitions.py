"""Requisitions with delegation-of-authority routing: create, submit, approve, return, reject,
forward, cancel."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from sqlalchemy import select

from ...http.api import In
from ...kernel.dates import IsoDate
from ...kernel.errors import forbidden, invalid, not_found, refused
from ...kernel.identity import load_actor, users
from ...kernel.money import Quantity, from_cents, q4
from ...kernel.tx import Tx
from .. import org
from ..masterdata import items
from .common import line_cents, money_view, vendor_row
from .tables import (
    approval_requests,
    requisition_lines,
    requisitions,
)


class ReqLineIn(In):
    """One requested item or service."""

    item_id: str | None = None
    description: str | None = Field(None, max_length=500)
    qty: Quantity = Field(gt=0)
    unit_price: Quantity | None = Field(None, ge=0, description="Estimated unit price; defaults to standard cost")
    vendor_id: str | None = None
    account_id: str | None = None
    need_by: IsoDate | None = None


class RequisitionIn(In):
    """A new requisition (draft)."""

    department_id: str | None = None
    need_by: IsoDate | None = None
    note: str | None = Field(None, max_length=4000)
    lines: list[ReqLineIn] = Field(min_length=1, max_length=200)


RoutingReason = Literal["amount", "budget", "split", "own_request", "approver_on_leave", "missing_justification",
                        "missing_account", "missing_information", "wrong_vendor", "duplicate", "other"]


class ForwardIn(In):
    """Route a requisition to the next approver."""

    to: str
    reason: RoutingReason | None = Field(None, description="Why it is routed on (amount, budget, split, own_request, "
                                                            "approver_on_leave, ...)")
    note: str | None = Field(None, max_length=2000)


class NoteIn(In):
    """An optional note with a decision."""

    note: str | None = Field(None, max_length=2000)


class DecisionIn(NoteIn):
    """A note and, for a return or rejection, the reason code."""

    reason: RoutingReason | None = Field(None, description="Why it is returned or rejected (missing_justification, "
                                                            "missing_account, ...)")


def reasoned_note(reason: str | None, note: str | None) -> str | None:
    """The note stored with a decision: ``[reason] note`` when a reason code is given."""
    if reason is None:
        return note
    return f"[{reason}] {note}".rstrip() if note else f"[{reason}]"


def create_requisition(tx: Tx, body: RequisitionIn) -> dict[str, Any]:
    """Record a draft requisition for the acting user."""
    user = tx.get(users, tx.actor.user_id, "user")
    dept = body.department_id or user["department_id"]
    if body.department_id and tx.find(org.departments, id=body.department_id) is None:
        raise not_found("department", body.department_id)
    lines = []
    for n, l in enumerate(body.lines, start=1):
        item = tx.find(items, id=l.item_id) if l.item_id else None
        if l.item_id and item is None:
            raise not_found("item", l.item_id)
        if item is None and not l.description:
            raise invalid(f"Line {n}: give an item_id or a description.")
        if l.vendor_id:
            vendor_row(tx, l.vendor_id)
        price = q4(l.unit_price if l.unit_price is not None else (item["standard_cost"] if item else 0))
        qty = q4(l.qty)
        lines.append(dict(line_no=n, item_id=l.item_id, description=l.description or item["description"],  # type: ignore[index]
                          qty=qty, uom=item["uom"] if item else None, unit_price=price,
                          amount_cents=line_cents(qty, price), vendor_id=l.vendor_id, account_id=l.account_id,
                          need_by=(l.need_by or body.need_by).isoformat() if (l.need_by or body.need_by) else None))  # type: ignore[union-attr]
    doc = tx.create_doc("requisition", requisitions, "REQ", "draft", requester=tx.actor.user_id,
                        department_id=dept, need_by=body.need_by.isoformat() if body.need_by else None,
                        note=body.note, total_cents=sum(l["amount_cents"] for l in lines))
    for l in lines:  # type: ignore[assignment]
        tx.insert(requisition_lines, requisition_id=doc["id"], **l)  # type: ignore[arg-type]
    return requisition_view(tx, doc["id"])


def _first_approver(tx: Tx, req: dict[str, Any]) -> str:
    """The delegation-of-authority's first approver: the department head (the requester's
    manager when the requester heads the department)."""
    dept = tx.find(org.departments, id=req["department_id"]) if req["department_id"] else None
    head = dept["head_user_id"] if dept else None
    if head and head != req["requester"]:
        return head
    requester = tx.find(users, id=req["requester"])
    if requester and requester["manager_id"]:
        return requester["manager_id"]
    raise refused("no_approver", f"Requisition {req['id']} has no department head or manager to approve it.")


def _new_request(tx: Tx, req: dict[str, Any], approver: str, note: str | None = None) -> str:
    rid = tx.next_id("APR")
    tx.insert(approval_requests, id=rid, doc_type="requisition", doc_id=req["id"], approver=approver,
              status="pending", amount_cents=req["total_cents"], requested_by=tx.actor.user_id,
              requested_on=tx.business_date, note=note)
    tx.update(requisitions, req["id"], assigned_to=approver)
    return rid


def _pending_request(tx: Tx, req_id: str) -> dict[str, Any] | None:
    return tx.one(select(approval_requests).where(approval_requests.c.doc_id == req_id,
                                                  approval_requests.c.status == "pending")
                  .order_by(approval_requests.c.id.desc()))


def _close_request(tx: Tx, req_id: str, status: str, note: str | None) -> None:
    tx.touch("requisition", req_id)          # first touch: the audit row names the requisition
    pending = _pending_request(tx, req_id)
    if pending:
        tx.touch("approval_request", pending["id"])
        tx.update(approval_requests, pending["id"], status=status, acted_on=tx.business_date,
                  acted_by=tx.actor.user_id, note=note or pending["note"])


def submit_requisition(tx: Tx, req_id: str) -> dict[str, Any]:
    """Submit a draft (or returned) requisition; it goes to the first approver."""
    req = tx.get(requisitions, req_id, "requisition")
    if req["requester"] != tx.actor.user_id:
        raise forbidden(f"Only the requester ({req['requester']}) can submit requisition {req_id}.")
    tx.set_status("requisition", requisitions, req_id, "submitted", "submitted for approval",
                  allowed_from=["draft", "returned"])
    _new_request(tx, req, _first_approver(tx, req))
    return requisition_view(tx, req_id)


def _check_approver(tx: Tx, req: dict[str, Any]) -> None:
    if req["status"] != "submitted":
        raise refused("bad_status", f"requisition {req['id']} is {req['status']}; this action needs it to be submitted.",
                      status=req["status"])
    if req["requester"] == tx.actor.user_id:
        raise refused("requester_cannot_approve", f"You requested {req['id']}; someone else must decide it.")
    if req["assigned_to"] != tx.actor.user_id:
        raise refused("not_assigned", f"Requisition {req['id']} is waiting on {req['assigned_to']}, not you.",
                      assigned_to=req["assigned_to"])


def approve_requisition(tx: Tx, req_id: str, body: NoteIn | None) -> dict[str, Any]:
    """Approve as the assigned approver, within the approver's requisition limit."""
    req = tx.get(requisitions, req_id, "requisition")
    _check_approver(tx, req)
    limit = org.approval_limit_cents(tx, tx.actor.user_id, "requisition")
    if req["total_cents"] > limit:
        raise refused("over_limit", f"Requisition {req_id} totals {from_cents(req['total_cents']):.2f}, above your "
                      f"requisition limit of {from_cents(limit):.2f}; forward it to the next approver.",
                      amount=from_cents(req["total_cents"]), limit=from_cents(limit))
    _close_request(tx, req_id, "approved", body.note if body else None)
    tx.set_status("requisition", requisitions, req_id, "approved", (body.note if body else None) or "approved",
                  approved_by=tx.actor.user_id, approved_on=tx.business_date, assigned_to=None)
    return requisition_view(tx, req_id)


def decide_requisition(tx: Tx, req_id: str, decision: str, body: NoteIn | None) -> dict[str, Any]:
    """Reject or return (for changes) as the assigned approver."""
    req = tx.get(requisitions, req_id, "requisition")
    _check_approver(tx, req)
    note = reasoned_note(getattr(body, "reason", None), body.note) if body else None
    _close_request(tx, req_id, decision, note)
    to = "rejected" if decision == "rejected" else "returned"
    tx.set_status("requisition", requisitions, req_id, to, note or decision, assigned_to=None)
    return requisition_view(tx, req_id)


def forward_requisition(tx: Tx, req_id: str, body: ForwardIn) -> dict[str, Any]:
    """Route a submitted requisition to another approver (the next level, or a delegate)."""
    req = tx.get(requisitions, req_id, "requisition")
    if req["status"] != "submitted":
        raise refused("bad_status", f"requisition {req_id} is {req['status']}; only a submitted one can be forwarded.",
                      status=req["status"])
    if tx.actor.user_id not in (req["assigned_to"], req["requester"]):
        raise refused("not_assigned", f"Requisition {req_id} is waiting on {req['assigned_to']}; only they or the "
                      f"requester can route it.", assigned_to=req["assigned_to"])
    target = load_actor(tx.conn, body.to)
    if target is None:
        raise not_found("user", body.to)
    if body.to == req["requester"]:
        raise refused("requester_cannot_approve", f"{body.to} requested {req_id} and cannot approve it.")
    if not target.can("req.approve"):
        raise refused("not_an_approver", f"{body.to} cannot approve requisitions.")
    if body.to == req["assigned_to"]:
        raise invalid(f"Requisition {req_id} is already waiting on {body.to}.")
    tx.touch("requisition", req_id)
    note = reasoned_note(body.reason, body.note)
    _close_request(tx, req_id, "forwarded", note)
    _new_request(tx, req, body.to, note)
    return requisition_view(tx, req_id)


def cancel_requisition(tx: Tx, req_id: str, body: NoteIn | None) -> dict[str, Any]:
    """The requester withdraws a requisition that is not yet approved."""
    req = tx.get(requisitions, req_id, "requisition")
    if req["requester"] != tx.actor.user_id:
        raise forbidden(f"Only the requester ({req['requester']}) can cancel requisition {req_id}.")
    _close_request(tx, req_id, "cancelled", body.note if body else None)
    tx.set_status("requisition", requisitions, req_id, "cancelled", (body.note if body else None) or "cancelled",
                  allowed_from=["draft", "submitted", "returned"], assigned_to=None)
    return requisition_view(tx, req_id)


def requisition_view(tx: Tx, req_id: str) -> dict[str, Any]:
    """A requisition with lines, approval requests, history and links."""
    req = tx.get(requisitions, req_id, "requisition")
    lines = tx.rows(requisition_lines, requisition_id=req_id)
    return {**money_view(req, "total_cents"),
            "lines": [money_view(l, "amount_cents") for l in lines],
            "approvals": [money_view(a, "amount_cents") for a in
                          tx.rows(approval_requests, order_by=approval_requests.c.id, doc_id=req_id)],
            "history": tx.history("requisition", req_id),
            "links": {"purchase_order": sorted({l["po_id"] for l in lines if l["po_id"]})}}
