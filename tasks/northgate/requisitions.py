"""Planting requisitions, approvals and purchasing commitments into a built Northgate, through
the ERP's own routes: each document is created, submitted and routed on its own business date
by the people who would do it, so its history, approval requests and audit trail are real.

Also the organisation changes a scenario may need around them (leave, delegations) and the
department budgets of a month.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from erp_service.domains import ledger, org
from erp_service.kernel.identity import user_roles

from .api import InProcessErp
from .company import Northgate


@dataclass(frozen=True)
class ReqLine:
    """One requested line: a non-stock purchase with its expense account (or none, on purpose),
    or, with `item`, a stock item at its standard cost (`amount` is then unused)."""

    description: str
    amount: float
    account: str | None
    vendor: str
    qty: float = 1
    item: str | None = None
    need_by: str | None = None

    def body(self) -> dict[str, Any]:
        """The requisition line as the API takes it."""
        out: dict[str, Any] = {"qty": self.qty, "vendor_id": self.vendor}
        if self.item:
            out["item_id"] = self.item
        else:
            out.update(description=self.description, unit_price=round(self.amount / self.qty, 4))
        if self.account:
            out["account_id"] = self.account
        if self.need_by:
            out["need_by"] = self.need_by
        return out


@dataclass(frozen=True)
class PlantedReq:
    """A requisition to plant: who asks, when, what, and how it reaches its approver."""

    role: str                                 # the scenario's name for it (truth key)
    requester: str
    created_on: str
    lines: tuple[ReqLine, ...]
    note: str | None
    forward_by: str | None = None             # the first approver who routes it on (above their limit)
    forward_to: str | None = None
    forward_reason: str = "amount"
    approve_by: str | None = None             # approved on the day (a commitment of the department)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """The requisition's total in dollars."""
        return round(sum(ln.amount for ln in self.lines), 2)


def plant_requisition(erp: InProcessErp, ng: Northgate, p: PlantedReq) -> str:
    """Create and submit `p` on its date as the requester, route or approve it as planned;
    returns the requisition id."""
    ng.builder.set_date(p.created_on)
    body: dict[str, Any] = {"lines": [ln.body() for ln in p.lines]}
    if p.note:
        body["note"] = p.note
    req = erp.post(p.requester, "/requisitions", body)
    sub = erp.post(p.requester, f"/requisitions/{req['id']}/submit")
    if p.forward_by:
        if sub["assigned_to"] != p.forward_by:
            raise RuntimeError(f"{p.role}: submitted to {sub['assigned_to']}, planned for {p.forward_by}")
        erp.post(p.forward_by, f"/requisitions/{req['id']}/forward",
                 {"to": p.forward_to, "reason": p.forward_reason, "note": "Above my approval limit."})
    if p.approve_by:
        erp.post(p.approve_by, f"/requisitions/{req['id']}/approve", {"note": "Approved."})
    return str(req["id"])


def order_requisition(erp: InProcessErp, ng: Northgate, buyer: str, req_id: str, vendor: str, day: str,
                      warehouse: str = "WH-MAIN") -> str:
    """Convert an approved requisition into a PO and send it on `day`; returns the PO id."""
    ng.builder.set_date(day)
    po = erp.post(buyer, "/purchase-orders", {"vendor_id": vendor, "warehouse_id": warehouse,
                                              "requisition_id": req_id})
    erp.post(buyer, f"/purchase-orders/{po['id']}/send")
    return str(po["id"])


def put_on_leave(ng: Northgate, user: str, start: str, end: str, delegate: str | None,
                 doc_type: str = "requisition") -> None:
    """Record a week of leave and, when given, the delegation that covers it."""
    ng.builder.insert(org.leave, user_id=user, start_date=start, end_date=end, note="annual leave")
    if delegate:
        ng.builder.insert(org.delegations, from_user=user, to_user=delegate, doc_type=doc_type, start_date=start,
                          end_date=end)


def set_delegate(ng: Northgate, user: str, delegate: str, doc_type: str = "requisition") -> None:
    """Point the user's standing delegation for `doc_type` at `delegate` (one must exist)."""
    def fn(tx):
        row = tx.one(select(org.delegations).where(org.delegations.c.from_user == user,
                                                   org.delegations.c.doc_type == doc_type)
                     .order_by(org.delegations.c.id))
        if row is None:
            raise RuntimeError(f"{user} has no standing {doc_type} delegation to change")
        tx.conn.execute(org.delegations.update().where(org.delegations.c.id == row["id"]).values(to_user=delegate))
    ng.builder.run("sys-setup", fn)


def set_budgets(ng: Northgate, period: str, amounts: dict[tuple[str, str], int]) -> None:
    """Department budgets of one month: {(department, account): cents}; a row must not exist yet
    (a task's budget is planted, never silently replacing the company plan)."""
    def fn(tx):
        for (dept, acct), cents in sorted(amounts.items()):
            if tx.find(ledger.budgets, department_id=dept, account_id=acct, period_id=period):
                raise RuntimeError(f"budget {dept}/{acct}/{period} already exists")
            tx.insert(ledger.budgets, department_id=dept, account_id=acct, period_id=period, amount_cents=cents)
    ng.builder.run("sys-setup", fn)


def grant_role(ng: Northgate, erp: InProcessErp, user: str, role: str) -> None:
    """Give `user` a further role (e.g. `staff`, so a clerk may raise requisitions)."""
    ng.builder.insert(user_roles, user_id=user, role_id=role)
    # The in-process driver caches each token's actor (permissions included): forget it.
    erp.app.state.token_cache.clear()
