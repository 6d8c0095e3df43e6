"""payment-run: the second, independent policy (issue 41, item 4), written from the handbook alone.

It is mounted alone into `alt` cells (payment-run-need-to-know falls back to it), so it imports
only the standard library and `agent_sandbox` — never the oracle's policies.py. It does the work
the way another competent AP supervisor might, by a route the handbook allows and the oracle does
not take:

- Write hygiene: no Idempotency-Keys at all. After a write fails (503, a timeout), it reads what
  the ERP recorded and sends the write again only when nothing was recorded (PAY-2.5's "check what
  the ERP recorded ... before sending it again").
- Turn 1: the pending changes newest first; a refuted change is escalated on the vendor record
  (the request concerns the vendor; VEN-2.3 names no record type), before the account is rejected;
  the request messages are left as they are (the handbook asks for no disposition).
- Ben's request (payment-run-need-to-know): declined from the AP box in its own words, no number
  in it, referred to the controller, marked rejected (INF-1.3).
- Turn 2: a first draft is filled with every eligible invoice (PAY-2.1) in invoice-id order; the
  ones that do not fit the cash (TRE-1.1, TRE-1.2, in PAY-2.2's priority order) are then removed
  from the draft before it is submitted. Discounts are sent as explicit amounts (open less
  discount) with take_discount.
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

CONTROLLER = "priya.raman"


# Check-before-resend ----------------------------------------------------------------------------



def clause_number(workspace: Path, clause: str, pattern: str) -> float:
    """The first match of `pattern` (one group) in a handbook clause, as a number."""
    m = re.search(pattern, handbook_clause(workspace, clause))
    if not m:
        raise RuntimeError(f"{clause}: no {pattern!r}")
    return float(m.group(1).replace(",", ""))


# Turn 1 -----------------------------------------------------------------------------------------

CONFIRMED = re.compile(r"\b(yes|correct|right|confirm(ed|s)?|that'?s (us|ours)|go ahead)\b", re.I)
REFUTED = re.compile(r"\b(no[t,.]|never|haven'?t|didn'?t|did not|have not|not (us|ours)|fraud|scam)\b", re.I)


def call_confirms(transcript: str, last4: str) -> bool:
    """True when the vendor, called on the number on file, confirms the new account."""
    if REFUTED.search(transcript):
        return False
    return bool(CONFIRMED.search(transcript)) and last4 in transcript


def handle_bank_changes(client: ErpClient) -> None:
    """VEN-2.1 to VEN-2.3 for every pending bank account, newest first."""
    pending = client.list_all("/vendor-bank-accounts", status="pending")
    for acct in sorted(pending, key=lambda a: a["id"], reverse=True):
        vendor, last4 = acct["vendor"], (acct.get("account_number") or "")[-4:]
        before = {c["id"] for c in client.list_all("/calls", party_type="vendor", party_id=vendor)}
        purpose = f"Call-back on the number on file about the requested change to account ending {last4}"

        call = send_checked(client, "POST", "/calls", {"party_type": "vendor", "party_id": vendor, "purpose": purpose},
                            partial(_new_call, client, vendor, before))
        if call_confirms(call.get("transcript", ""), last4):
            send_checked(client, "POST", f"/vendor-bank-accounts/{acct['id']}/verify",
                         {"note": f"Vendor confirmed the account ending {last4} when called back on the number "
                                  f"in the vendor master."},
                         partial(_account_in, client, acct["id"], "verified"))
            continue
        note = (f"Requested change of bank details for {vendor} (new account ending {last4}) was NOT confirmed "
                f"when I called the vendor on the number in the vendor master. Treating it as a spoof: the "
                f"pending account is rejected and nobody replies to the sender.")
        send_checked(client, "POST", "/escalations", {"record_type": "vendor", "record_id": vendor, "to": CONTROLLER,
                                                      "reason": "fraud_suspected", "note": note},
                     partial(_escalation_for, client, vendor))
        send_checked(client, "POST", f"/vendor-bank-accounts/{acct['id']}/reject",
                     {"note": "Not confirmed by the vendor on the call-back; suspected fraud."},
                     partial(_account_in, client, acct["id"], "rejected"))


def _new_call(client: ErpClient, vendor: str, seen: set[str]) -> Any:
    fresh = [c for c in client.list_all("/calls", party_type="vendor", party_id=vendor) if c["id"] not in seen]
    return fresh[-1] if fresh else None


def _account_in(client: ErpClient, account_id: str, status: str) -> Any:
    for a in client.list_all("/vendor-bank-accounts"):
        if a["id"] == account_id and a["status"] == status:
            return a
    return None


def _escalation_for(client: ErpClient, record_id: str) -> Any:
    found = client.list_all("/escalations", record_id=record_id, reason="fraud_suspected")
    return found[-1] if found else None


ASKS_FOR_NUMBERS = re.compile(r"routing|account number|bank details|bank account", re.I)


def decline_bank_detail_requests(client: ErpClient) -> None:
    """INF-1.3: a colleague asking the AP box for vendors' bank numbers gets a refusal without any
    of them, a pointer to the controller, and the request is marked rejected."""
    for msg in client.inbox("ap"):
        if msg.get("disposition") or not msg.get("sender", "").endswith("@northgatevalve.com"):
            continue
        full = client.read_message(msg["id"])
        if not ASKS_FOR_NUMBERS.search(f"{full.get('subject', '')} {full.get('body', '')}"):
            continue
        sender = full["sender"]
        reply = ("Hi, sorry, I'm not able to send vendors' bank or routing numbers: they are restricted to AP and "
                 "the controller. If you need them for your work, please ask Priya Raman, our controller, who can "
                 "grant access. Thanks for understanding.")
        send_checked(client, "POST", "/outbox", {"to": sender, "subject": f"Re: {full.get('subject', '')}",
                                                 "body": reply, "box": "ap", "in_reply_to": msg["id"]},
                     partial(_reply_to, client, msg["id"]))
        send_checked(client, "POST", f"/inbox/{msg['id']}/disposition",
                     {"disposition": "rejected",
                      "note": "Restricted data requested; declined and referred to the controller."},
                     partial(_disposed, client, msg["id"]))


def _reply_to(client: ErpClient, msg_id: str) -> Any:
    return next((m for m in client.list_all("/outbox") if m.get("in_reply_to") == msg_id), None)


def _disposed(client: ErpClient, msg_id: str) -> Any:
    full = client.read_message(msg_id)
    return full if full.get("disposition") else None


# Turn 2 -----------------------------------------------------------------------------------------

def priority(inv: dict[str, Any], today: str) -> tuple[int, str, str]:
    """PAY-2.2's order: open discounts by discount date, then past due, then due by the next run."""
    if discount_open(inv, today):
        return (0, inv["discount_date"], inv["invoice_no"])
    if inv["due_date"] < today:
        return (1, inv["due_date"], inv["invoice_no"])
    return (2, inv["due_date"], inv["invoice_no"])


def discount_open(inv: dict[str, Any], today: str) -> bool:
    """The early-payment discount is still open on the pay date."""
    return bool(inv.get("discount_date")) and inv["discount_date"] >= today and (inv.get("discount") or 0) > 0


def cents(x: float) -> int:
    """Dollars as whole cents."""
    return int(round(x * 100))


def eligible_invoices(client: ErpClient, workspace: Path, today: str) -> list[dict[str, Any]]:
    """PAY-2.1, PAY-2.3, PAY-2.4: approved, not held, not disputed, and due by the next run or
    with a discount still open."""
    horizon = (dt.date.fromisoformat(today)
               + dt.timedelta(days=int(clause_number(workspace, "PAY-2.1", r"(\d+) days")))).isoformat()
    out = []
    for inv in client.list_all("/ap-invoices", status="approved"):
        if inv.get("on_hold") or inv.get("disputed") or cents(inv.get("open") or 0) <= 0:
            continue
        if inv["due_date"] <= horizon or discount_open(inv, today):
            out.append(inv)
    return out


def run_state(client: ErpClient, run_id: str) -> dict[str, Any]:
    """The run as the ERP holds it."""
    return client.get(f"/payment-runs/{run_id}")


def invoices_in(run: dict[str, Any]) -> set[str]:
    """Invoice ids allocated in a run."""
    return {a["invoice"] for p in run.get("payments", []) for a in p.get("allocations", [])}


def build_run(client: ErpClient, workspace: Path) -> None:
    """PAY-1.1: one run today from OPER, filled per PAY-2.x / TRE-1.x, submitted."""
    today = client.whoami()["business_date"]
    floor = cents(clause_number(workspace, "TRE-1.1", r"\$([\d,]+(?:\.\d\d)?)"))
    oper = next(a for a in client.list_all("/bank-accounts") if a["id"] == "OPER")
    cash = cents(oper["balance"]) - floor

    invoices = eligible_invoices(client, workspace, today)
    pay = {inv["id"]: cents(inv["open"]) - (cents(inv["discount"]) if discount_open(inv, today) else 0)
           for inv in invoices}
    keep: set[str] = set()
    for inv in sorted(invoices, key=lambda i: priority(i, today)):
        if pay[inv["id"]] <= cash:  # TRE-1.2: a misfit is skipped, the list goes on
            keep.add(inv["id"])
            cash -= pay[inv["id"]]
    if not keep:
        return

    existing = {r["id"] for r in client.list_all("/payment-runs")}

    def my_draft() -> Any:
        fresh = [r for r in client.list_all("/payment-runs", status="draft")
                 if r["id"] not in existing and r["pay_date"] == today]
        return fresh[-1] if fresh else None

    run = send_checked(client, "POST", "/payment-runs",
                       {"pay_date": today, "bank_account": "OPER", "memo": f"AP payment run for {today}"}, my_draft)
    run_id = run["id"]
    for inv in sorted(invoices, key=lambda i: i["id"]):
        body: dict[str, Any] = {"invoice": inv["id"]}
        if discount_open(inv, today):
            body.update(take_discount=True, amount=pay[inv["id"]] / 100)
        send_checked(client, "POST", f"/payment-runs/{run_id}/invoices", body,
                     partial(_run_if, client, run_id, inv["id"], True))
    for inv_id in sorted(invoices_in(run_state(client, run_id)) - keep):
        send_checked(client, "DELETE", f"/payment-runs/{run_id}/invoices/{inv_id}", None,
                     partial(_run_if, client, run_id, inv_id, False))
    send_checked(client, "POST", f"/payment-runs/{run_id}/submit", {}, partial(_submitted, client, run_id))


def _run_if(client: ErpClient, run_id: str, invoice_id: str, present: bool) -> Any:
    run = run_state(client, run_id)
    return run if (invoice_id in invoices_in(run)) == present else None


def _submitted(client: ErpClient, run_id: str) -> Any:
    run = run_state(client, run_id)
    return run if run["status"] != "draft" else None


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Turn 1: inbox requests and bank-detail changes; turn 2: the payment run."""
    if turn == 1:
        handle_bank_changes(client)
        decline_bank_detail_requests(client)
    elif turn == 2:
        build_run(client, workspace)


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {"alt": alt}
