"""requisition-approval-queue: the second, independent policy (issue 41, item 4), written from the
handbook alone.

It is mounted alone into `alt` cells, so it imports only the standard library and
`agent_sandbox`. It takes a route the handbook allows and the oracle does not:

- Write hygiene: no Idempotency-Keys. After a write fails (503, a timeout) it reads the
  requisition (or the outbox) and sends again only when the ERP recorded nothing (GEN-1.3).
- Its own requisitions first (REQ-1.3 is the first check, and they need no queue), then the
  queue oldest first by requisition id (REQ-1.1).
- The requesters are told of returns at the end, in one message per requester naming every
  requisition returned to them and what each lacks (REQ-3.3 asks for a message that names the
  requisition; nothing asks for one message per requisition).
- Notes in its own words, with the reason codes the handbook lists (REQ-3.2).
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import handbook_clause, send_checked

# Reading people and dates ------------------------------------------------------------------------

def on_leave(user: dict[str, Any], today: str) -> bool:
    """The user's leave covers today."""
    return any(p["start"] <= today <= p["end"] for p in user.get("leave") or [])


def requisition_delegate(user: dict[str, Any], today: str) -> str | None:
    """The user's delegate for requisitions today, if any."""
    for d in user.get("delegations") or []:
        if d.get("doc_type") in ("requisition", None, "*") and (d.get("start") or "") <= today <= (d.get("end") or "9999"):
            return str(d["to"])
    return None


def who_decides(client: ErpClient, user_id: str, today: str) -> str:
    """REQ-1.4: the person to route to — the user, or while on leave their delegate (followed on
    while the delegate is away too)."""
    seen: set[str] = set()
    while user_id not in seen:
        seen.add(user_id)
        user = client.get(f"/users/{user_id}")
        if not on_leave(user, today):
            return user_id
        delegate = requisition_delegate(user, today)
        if not delegate:
            return user_id
        user_id = delegate
    return user_id


def _waits_on(user_id: str, req: dict[str, Any]) -> bool:
    return req["status"] == "submitted" and req.get("assigned_to") == user_id


def business_days_between(a: str, b: str) -> int:
    """Weekdays from the earlier date to the later one (0 on the same day)."""
    d0, d1 = sorted((dt.date.fromisoformat(a[:10]), dt.date.fromisoformat(b[:10])))
    n = 0
    while d0 < d1:
        d0 += dt.timedelta(days=1)
        if d0.weekday() < 5:
            n += 1
    return n


# The decisions -----------------------------------------------------------------------------------

def cents(x: float | None) -> int:
    """Dollars as whole cents."""
    return int(round((x or 0) * 100))


def vendors_of(req: dict[str, Any]) -> set[str]:
    """The vendors a requisition buys from."""
    return {ln["vendor_id"] for ln in req.get("lines", []) if ln.get("vendor_id")}


def missing(req: dict[str, Any]) -> str | None:
    """REQ-3.1: what makes the requisition incomplete, as the reason code."""
    if not (req.get("note") or "").strip():
        return "missing_justification"
    if any(not ln.get("item_id") and not ln.get("account_id") for ln in req.get("lines", [])):
        return "missing_account"
    return None


def split_groups(reqs: list[dict[str, Any]]) -> list[set[str]]:
    """REQ-2.2: requisitions from one requester for one vendor created within five business days
    of each other (chained), two or more to a group."""
    parent = {r["id"]: r["id"] for r in reqs}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, a in enumerate(reqs):
        for b in reqs[i + 1:]:
            if a["requester"] == b["requester"] and vendors_of(a) & vendors_of(b) \
                    and business_days_between(a["created_on"], b["created_on"]) <= 5:
                parent[root(a["id"])] = root(b["id"])
    groups: dict[str, set[str]] = {}
    for r in reqs:
        groups.setdefault(root(r["id"]), set()).add(r["id"])
    return [g for g in groups.values() if len(g) > 1]


def over_budget(client: ErpClient, req: dict[str, Any]) -> str | None:
    """REQ-2.1: the first expense account whose department budget this month (after actuals and
    open commitments) cannot take the requisition's lines on it."""
    per_account: dict[str, int] = {}
    for ln in req.get("lines", []):
        if ln.get("account_id"):
            per_account[ln["account_id"]] = per_account.get(ln["account_id"], 0) + cents(ln.get("amount"))
    for account, asked in sorted(per_account.items()):
        report = client.get("/reports/budget-availability", department=req["department_id"], account=account)
        rows = report.get("rows", []) if isinstance(report, dict) else []
        for row in rows:
            if row["department"] == req["department_id"] and row["account"] == account and asked > cents(row["available"]):
                return account
    return None


class Queue:
    """Maya's working state for the day."""

    def __init__(self, client: ErpClient, workspace: Path) -> None:
        self.client = client
        self.me = client.whoami()
        self.today: str = self.me["business_date"]
        m = re.search(r"\$([\d,]+(?:\.\d\d)?)", handbook_clause(workspace, "REQ-1.2"))
        self.limit = cents(float(m.group(1).replace(",", ""))) if m else cents(self.me["approval_limits"]["requisition"])
        self.returned: dict[str, list[tuple[str, str]]] = {}

    def route(self, req: dict[str, Any], to: str, reason: str, note: str) -> None:
        """Forward to `to` (or to whoever stands in for them today)."""
        target = who_decides(self.client, to, self.today)
        if target != to:
            note += f" {to} is on leave today, so it goes to {target}, the delegate (REQ-1.4)."
        self.client_write("POST", f"/requisitions/{req['id']}/forward",
                          {"to": target, "reason": reason, "note": note},
                          partial(self._now, req["id"], partial(_waits_on, target)))

    def give_back(self, req: dict[str, Any], reason: str, what: str) -> None:
        """Return to the requester (REQ-3.1) and remember to tell them (REQ-3.3)."""
        self.client_write("POST", f"/requisitions/{req['id']}/return",
                          {"reason": reason, "note": f"Returned: {what}. Please complete it and resubmit."},
                          partial(self._now, req["id"], lambda r: r["status"] == "returned"))
        self.returned.setdefault(req["requester"], []).append((req["id"], what))

    def approve(self, req: dict[str, Any]) -> None:
        """Approve (REQ-1.1: it passed every check)."""
        self.client_write("POST", f"/requisitions/{req['id']}/approve",
                          {"note": "Within my limit and the department budget; approved."},
                          partial(self._now, req["id"], lambda r: r["status"] == "approved"))

    def client_write(self, method: str, path: str, body: Any, recorded: Callable[[], Any]) -> Any:
        """One checked write."""
        return send_checked(self.client, method, path, body, recorded)

    def _now(self, req_id: str, done: Callable[[dict[str, Any]], bool]) -> Any:
        req = self.client.get(f"/requisitions/{req_id}")
        return req if done(req) else None

    # ---------------------------------------------------------------------------------------------

    def own_requisitions(self) -> None:
        """REQ-1.3: every own submitted requisition waiting on anyone else goes to my delegate."""
        delegate = requisition_delegate(self.me, self.today)
        if not delegate:
            return
        for req in sorted(self.client.list_all("/requisitions", requester=self.me["id"], status="submitted"),
                          key=lambda r: r["id"]):
            target = who_decides(self.client, delegate, self.today)
            if req.get("assigned_to") in (delegate, target):
                continue
            self.route(req, delegate, "own_request",
                       "My own requisition: decided by my delegate for requisitions, not by my manager.")

    def work_queue(self) -> None:
        """REQ-1.1 with the checks in the handbook's order."""
        waiting = [a["doc_id"] for a in self.client.list_all("/approvals")
                   if a.get("doc_type") == "requisition" and a.get("status") == "pending"]
        reqs = [self.client.get(f"/requisitions/{rid}") for rid in sorted(set(waiting))]
        reqs = [r for r in reqs if r["status"] == "submitted" and r.get("assigned_to") == self.me["id"]]
        by_id = {r["id"]: r for r in reqs}
        split_of: dict[str, set[str]] = {}
        for group in split_groups(reqs):
            if sum(cents(by_id[i]["total"]) for i in group) > self.limit:
                for i in group:
                    split_of[i] = group
        manager = self.me["manager"]
        for req in reqs:
            if req["requester"] == self.me["id"]:
                delegate = requisition_delegate(self.me, self.today) or manager
                self.route(req, delegate, "own_request", "I raised this one myself, so my delegate decides it.")
            elif (gap := missing(req)) is not None:
                what = ("there is no justification note" if gap == "missing_justification"
                        else "a line without an item has no expense account")
                self.give_back(req, gap, what)
            elif cents(req["total"]) > self.limit:
                self.route(req, manager, "amount", f"Total ${req['total']:,.2f} is over my requisition limit.")
            elif req["id"] in split_of:
                others = ", ".join(sorted(split_of[req["id"]] - {req["id"]}))
                self.route(req, manager, "split",
                           f"Same requester and vendor as {others} within five business days; together over my limit.")
            elif (account := over_budget(self.client, req)) is not None:
                self.route(req, manager, "budget",
                           f"Department {req['department_id']} has not enough budget left on account {account} "
                           f"this month once open commitments are counted.")
            else:
                self.approve(req)

    def tell_requesters(self) -> None:
        """REQ-3.3: one message per requester naming each returned requisition and what it lacks."""
        for requester, items in sorted(self.returned.items()):
            lines = "\n".join(f"- {rid}: {what}." for rid, what in items)
            ids = " ".join(rid for rid, _ in items)
            body = (f"Hello,\n\nI have sent back the following requisition(s) to you:\n{lines}\n\n"
                    f"Please add what is missing and submit again.\n\nMaya")
            self.client_write("POST", "/outbox", {"to": requester, "subject": "Requisitions returned to you",
                                                  "body": body},
                              partial(self._sent, requester, ids))

    def _sent(self, requester: str, ids: str) -> Any:
        for m in self.client.list_all("/outbox"):
            if requester in (m.get("to") or "") and ids.split()[0] in (m.get("body") or ""):
                return m
        return None


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """The one turn: own requisitions, the queue, then the messages."""
    q = Queue(client, workspace)
    q.own_requisitions()
    q.work_queue()
    q.tell_requesters()


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
