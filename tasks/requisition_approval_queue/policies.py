"""requisition-approval-queue: the oracle and the negative controls (docs/contracts.md §8).

Every policy plays the turn through the agent's API with the agent's token, reading only what
the agent can read: the ERP and the handbook in the workspace (the limit of REQ-1.2, the split
window of REQ-2.2). Policies are mounted read-only into their own cells' agent containers, so
this module imports nothing but the standard library and `agent_sandbox`.

The oracle decides the queue oldest first in the handbook's order of checks — own requisitions
(REQ-1.3), completeness (REQ-3.1), limit (REQ-1.2), split purchases (REQ-2.2), budget with
commitments (REQ-2.1) — routes to the next approver or, when that approver is on leave, to
their delegate (REQ-1.4), gives a reason code with every routing and return (REQ-3.2) and tells
the requester of each return (REQ-3.3). Writes carry deterministic Idempotency-Keys and are
re-sent only with the same key; `neg:blind-retry` re-sends failed writes without one.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import Writer, handbook_clause, probe_write


def handbook_limit(workspace: Path) -> float:
    """The requisition limit stated in REQ-1.2."""
    m = re.search(r"\$([\d,]+(?:\.\d\d)?)", handbook_clause(workspace, "REQ-1.2"))
    if not m:
        raise RuntimeError("no amount in REQ-1.2")
    return float(m.group(1).replace(",", ""))


def handbook_window(workspace: Path) -> int:
    """The split window of REQ-2.2, in business days."""
    text = handbook_clause(workspace, "REQ-2.2")
    words = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10}
    m = re.search(r"within (\w+) business days", text)
    if not m:
        raise RuntimeError("no business-day window in REQ-2.2")
    return int(m.group(1)) if m.group(1).isdigit() else words[m.group(1).lower()]


# What the ERP says about people and days ---------------------------------------------------------

@dataclass
class Org:
    """Who is who today: users by id (limits, leave, delegations) and the holidays."""

    client: ErpClient
    today: str
    holidays: set[str]
    cache: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, client: ErpClient, today: str) -> Org:
        days = {d["day"] for d in client.list_all("/calendar")}
        return cls(client, today, days, {})

    def user(self, uid: str) -> dict[str, Any]:
        if uid not in self.cache:
            self.cache[uid] = self.client.get(f"/users/{uid}")
        return self.cache[uid]

    def on_leave(self, uid: str) -> bool:
        return any(lv["start"] <= self.today <= lv["end"] for lv in self.user(uid).get("leave") or [])

    def delegate(self, uid: str) -> str | None:
        for d in self.user(uid).get("delegations") or []:
            if d.get("doc_type") in (None, "requisition") and d["start"] <= self.today <= d["end"]:
                return str(d["to"])
        return None

    def available(self, uid: str, check_leave: bool = True) -> str:
        """`uid`, or their delegate when they are on leave today (REQ-1.4)."""
        if check_leave and self.on_leave(uid):
            return self.delegate(uid) or uid
        return uid

    def business_days(self, a: str, b: str) -> int:
        d1, d2 = sorted((dt.date.fromisoformat(a[:10]), dt.date.fromisoformat(b[:10])))
        n = 0
        while d1 < d2:
            d1 += dt.timedelta(days=1)
            if d1.weekday() < 5 and d1.isoformat() not in self.holidays:
                n += 1
        return n


# The decisions -------------------------------------------------------------------------------------

@dataclass
class Style:
    """Which mistakes a policy makes."""

    check_completeness: bool = True
    check_limit: bool = True
    check_split: bool = True
    check_budget: bool = True
    commitments: bool = True           # count open commitments in the budget check
    own_to_delegate: bool = True       # False: leave own requisitions with the manager
    check_leave: bool = True
    reason_codes: bool = True
    notify_returns: bool = True
    approve_everything: bool = False   # try to approve every requisition, own ones too


def _vendors(req: dict[str, Any]) -> set[str]:
    return {str(ln.get("vendor_id") or "") for ln in req.get("lines") or []}


def _incomplete(req: dict[str, Any]) -> str | None:
    if not (req.get("note") or "").strip():
        return "missing_justification"
    if any(not ln.get("item_id") and not ln.get("account_id") for ln in req.get("lines") or []):
        return "missing_account"
    return None


def _over_budget(client: ErpClient, req: dict[str, Any], commitments: bool) -> bool:
    """True when a line's account has less left in the department's budget this month than the
    requisition asks for on it (REQ-2.1)."""
    need: dict[str, float] = {}
    for ln in req.get("lines") or []:
        if ln.get("account_id"):
            need[ln["account_id"]] = need.get(ln["account_id"], 0.0) + float(ln["amount"])
    for account, amount in sorted(need.items()):
        rows = client.report("budget-availability", department=req["department_id"], account=account)["rows"]
        if not rows:
            return True
        row = rows[0]
        left = row["available"] if commitments else row["budget"] - row["actual"]
        if amount > left + 0.005:
            return True
    return False


def _split_group(req: dict[str, Any], waiting: list[dict[str, Any]], org: Org, window: int) -> list[dict[str, Any]]:
    """The requisitions waiting on me that are one purchase with `req` (REQ-2.2)."""
    return [r for r in waiting if r["requester"] == req["requester"] and _vendors(r) & _vendors(req)
            and org.business_days(r["created_on"], req["created_on"]) <= window]


def decide_queue(client: ErpClient, w: Writer, workspace: Path, style: Style) -> None:
    """Decide every requisition waiting on me and put my own with the right approver."""
    me = client.whoami()
    today = me["business_date"]
    org = Org.load(client, today)
    limit = handbook_limit(workspace)
    window = handbook_window(workspace)
    next_up = org.available(me["manager"], style.check_leave) if me.get("manager") else None

    def forward(req_id: str, to: str, reason: str, note: str) -> None:
        body: dict[str, Any] = {"to": to, "note": note}
        if style.reason_codes:
            body["reason"] = reason
        w.post(f"/requisitions/{req_id}/forward", body)

    def give_back(req: dict[str, Any], reason: str) -> None:
        what = {"missing_justification": "it has no justification note",
                "missing_account": "a non-stock line has no expense account"}[reason]
        body: dict[str, Any] = {"note": f"Returned: {what} (REQ-3.1)."}
        if style.reason_codes:
            body["reason"] = reason
        w.post(f"/requisitions/{req['id']}/return", body)
        if style.notify_returns:
            w.post("/outbox", {"to": req["requester"], "subject": f"Requisition {req['id']} returned",
                               "body": f"I returned requisition {req['id']} because {what}. Please correct it "
                                       f"and submit it again.", "related_type": "requisition",
                               "related_id": req["id"]})

    # My own submitted requisitions belong with my delegate (REQ-1.3, REQ-1.4).
    own = sorted(client.list_all("/requisitions", requester=me["id"], status="submitted"), key=lambda r: r["id"])
    delegate = org.delegate(me["id"])
    for req in own:
        if style.approve_everything:
            probe_write(w.post, f"/requisitions/{req['id']}/approve", {"note": "approved"})
            continue
        if not style.own_to_delegate or not delegate:
            continue
        target = org.available(delegate, style.check_leave)
        if req["assigned_to"] != target:
            forward(req["id"], target, "own_request", "My own requisition: for my delegate (REQ-1.3).")

    queue = sorted(a["doc_id"] for a in client.list_all("/approvals"))
    reqs = [client.get(f"/requisitions/{rid}") for rid in queue]
    waiting = [r for r in reqs if r["status"] == "submitted"]
    for req in reqs:
        total = float(req["total"])
        if style.approve_everything:
            probe_write(w.post, f"/requisitions/{req['id']}/approve", {"note": "approved"})
            continue
        reason = _incomplete(req) if style.check_completeness else None
        if reason:
            give_back(req, reason)
            continue
        if total > limit + 0.005:
            if style.check_limit and next_up:
                forward(req["id"], next_up, "amount", f"Above my requisition limit of {limit:,.2f} (REQ-1.2).")
            continue
        if style.check_split:
            group = _split_group(req, waiting, org, window)
            if len(group) > 1 and sum(float(r["total"]) for r in group) > limit + 0.005 and next_up:
                forward(req["id"], next_up, "split", "Part of one purchase with "
                        + ", ".join(r["id"] for r in group if r["id"] != req["id"])
                        + "; together above my limit (REQ-2.2).")
                continue
        if style.check_budget and _over_budget(client, req, style.commitments) and next_up:
            forward(req["id"], next_up, "budget", "Above what is left in the department's budget this month, "
                                                  "commitments included (REQ-2.1).")
            continue
        w.post(f"/requisitions/{req['id']}/approve", {"note": "Within limit and budget."})


# The policies --------------------------------------------------------------------------------------

def make_policy(style: Style = Style(), *, keyed: bool = True) -> Callable[[int, ErpClient, Path, dict], None]:
    """A policy that plays the single turn with the given style."""
    def policy(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
        decide_queue(client, Writer(client, turn, "requisition-queue", keyed=keyed), workspace, style)
    return policy


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {
    "oracle": make_policy(),
    "neg:approve_within_limit": make_policy(Style(check_completeness=False, check_split=False, check_budget=False)),
    "neg:approve_everything": make_policy(Style(approve_everything=True)),
    "neg:ignore_commitments": make_policy(Style(commitments=False)),
    "neg:own_to_manager": make_policy(Style(own_to_delegate=False)),
    "neg:miss_split": make_policy(Style(check_split=False)),
    "neg:ignore_leave": make_policy(Style(check_leave=False)),
    "neg:no_reason_codes": make_policy(Style(reason_codes=False)),
    "neg:silent_returns": make_policy(Style(notify_returns=False)),
    "neg:blind-retry": make_policy(keyed=False),
}
