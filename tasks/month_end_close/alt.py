"""month-end-close: the alt policy, a second way of closing September written from the handbook
(close.md), the turn requests and the ERP's API alone.

How it differs from the oracle on purpose (issue 41, item 4):
- Another order of work: the revenue cutoff first, then the prepaid, depreciation and payroll.
- Each entry is built as a draft, its support attached (a text file the policy writes from the
  message or the records it comes from), and only then posted or submitted (CLO-1.2, CLO-1.3).
- The cutoff's reversal is its own manual entry dated the first day of October, prepared the
  same day as the accrual (not the ERP's reverse action).
- Writes carry no Idempotency-Key; after a failed or unanswered write the policy looks in the
  ERP for its effect and re-sends only when nothing is there (CLO-1.3, "look at what exists").
- The tie-outs are reported to the controller by message, and the notes are its own words.

It imports only the standard library and `agent_sandbox` (it is mounted alone as the policy).
"""
from __future__ import annotations

import base64
import datetime as dt
import re
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import checked_write

CONTROLLER = "priya.raman"
APPROVAL_AT = 5000.00          # CLO-1.3 (read from the handbook at run time; this is the fallback)
TIE_ACCOUNTS = ("1200", "2000", "2050")   # CLO-3.1
STATE_FILE = "close-working.txt"           # what this policy booked, for its own later turns




def money(text: str) -> float:
    """`$51,917.02` -> 51917.02."""
    return float(text.replace("$", "").replace(",", ""))


def month_bounds(client: ErpClient) -> tuple[str, str]:
    """The last day of the month being closed and the first day of the next (the month before
    the business date)."""
    today = dt.date.fromisoformat(client.whoami()["business_date"])
    first = today.replace(day=1)
    return (first - dt.timedelta(days=1)).isoformat(), first.isoformat()


def approval_threshold(workspace: Path) -> float:
    """CLO-1.3's amount, read from the handbook."""
    for md in sorted((workspace / "handbook").glob("*.md")):
        m = re.search(r"\*\*CLO-1\.3\*\*[^\n]*?\$([\d,]+\.\d\d)", md.read_text(encoding="utf-8"))
        if m:
            return money(m.group(1))
    return APPROVAL_AT


# -- entries -----------------------------------------------------------------------------------

def my_manual_entries(client: ErpClient) -> list[dict[str, Any]]:
    """Manual entries I prepared that are still alive."""
    return [e for e in client.list_all("/journal-entries", source="manual")
            if e.get("prepared_by") == client.whoami()["id"] and e["status"] not in ("cancelled", "voided", "deleted")]


def book(client: ErpClient, workspace: Path, *, date: str, memo: str, lines: list[dict[str, Any]],
         support_name: str, support: str) -> dict[str, Any]:
    """Create the entry (unless an entry of mine with this memo and date exists), attach its
    support, then post it (below the threshold) or submit it to the controller."""
    def existing() -> Any:
        return next((e for e in my_manual_entries(client) if e["memo"] == memo and e["entry_date"] == date), None)
    entry = existing() or checked_write(
        lambda: client.post("/journal-entries", {"entry_date": date, "memo": memo, "lines": lines}), existing)
    attach(client, entry["id"], support_name, support)
    return finish(client, entry["id"], approval_threshold(workspace))


def attach(client: ErpClient, entry_id: str, name: str, text: str) -> None:
    """Attach the support once (CLO-1.2)."""
    def attached() -> Any:
        return next((a for a in client.get(f"/journal-entries/{entry_id}").get("attachments", [])
                     if a.get("filename") == name), None)
    if attached():
        return
    body = {"filename": name, "content_type": "text/plain",
            "content_base64": base64.b64encode(text.encode("utf-8")).decode("ascii")}
    checked_write(lambda: client.post(f"/journal-entries/{entry_id}/attachments", body), attached)


def finish(client: ErpClient, entry_id: str, threshold: float) -> dict[str, Any]:
    """Post a small entry myself; submit one at or above the threshold (CLO-1.3)."""
    entry = client.get(f"/journal-entries/{entry_id}")
    if entry["status"] not in ("draft", "returned"):
        return entry
    action, after = ("submit", "submitted") if float(entry["total"]) >= threshold - 0.005 else ("post", "posted")

    def done() -> Any:
        e = client.get(f"/journal-entries/{entry_id}")
        return e if e["status"] in (after, "approved", "posted") else None
    checked_write(lambda: client.post(f"/journal-entries/{entry_id}/{action}"), done)
    return client.get(f"/journal-entries/{entry_id}")


def dr(account: str, amount: float, memo: str) -> dict[str, Any]:
    return {"account": account, "debit": round(amount, 2), "memo": memo}


def cr(account: str, amount: float, memo: str) -> dict[str, Any]:
    return {"account": account, "credit": round(amount, 2), "memo": memo}


def message_text(msg: dict[str, Any]) -> str:
    """A message saved as a text file (the handbook accepts this as support)."""
    return (f"From: {msg.get('sender')}\nDate: {msg.get('received_on')}\nSubject: {msg.get('subject')}\n\n"
            f"{msg.get('body', '')}\n")


def find_message(client: ErpClient, words: str) -> dict[str, Any] | None:
    """The accounting message whose subject matches `words` (a regex), read in full."""
    for m in client.inbox("accounting"):
        if re.search(words, m.get("subject") or "", re.I):
            return client.read_message(m["id"])
    return None


# -- turn 1 ------------------------------------------------------------------------------------

def cutoff(client: ErpClient, workspace: Path, month_end: str, next_first: str) -> list[str]:
    """CLO-2.5: every shipment of the month billed in the next month, accrued and reversed."""
    done: list[str] = []
    for inv in client.list_all("/ar-invoices"):
        if not (inv.get("invoice_date") or "") >= next_first or inv.get("status") in ("void", "voided"):
            continue
        full = client.get(f"/ar-invoices/{inv['id']}")
        ship_id = (full.get("links") or {}).get("shipment")
        if not ship_id:
            continue
        ship = client.get(f"/shipments/{ship_id}")
        if not (month_end[:7] + "-01" <= ship["ship_date"] <= month_end):
            continue
        amount = float(full["subtotal"])  # before tax
        support = (f"Revenue cutoff support\n\nShipment {ship_id} (order {ship.get('so_id')}, customer "
                   f"{ship.get('customer_id')}) shipped {ship['ship_date']}.\nCustomer invoice {full['id']} "
                   f"dated {full['invoice_date']}: subtotal {amount:.2f}, tax {float(full.get('tax') or 0):.2f}, "
                   f"total {float(full['total']):.2f}.\n")
        what = f"shipment {ship_id} billed on {full['id']}"
        book(client, workspace, date=month_end, memo=f"Revenue cutoff: accrue {what} (shipped {ship['ship_date']})",
             lines=[dr("1120", amount, f"Unbilled receivable, {ship_id}"), cr("4000", amount, f"Product sales shipped {ship['ship_date']}")],
             support_name=f"cutoff-{ship_id}.txt", support=support)
        book(client, workspace, date=next_first, memo=f"Reverse the revenue cutoff accrual for {what}",
             lines=[dr("4000", amount, f"Reverse cutoff accrual, {full['id']}"), cr("1120", amount, f"Unbilled receivable cleared, {ship_id}")],
             support_name=f"cutoff-{ship_id}-reversal.txt", support=support)
        done.append(f"{ship_id}|{full['id']}|{amount:.2f}|{ship['ship_date']}|{full['invoice_date']}")
    return done


def prepaid(client: ErpClient, workspace: Path, month_end: str) -> float:
    """CLO-2.3 from the prepaid schedule."""
    msg = find_message(client, r"prepaid")
    if msg is None:
        return 0.0
    m = re.search(r"releases\s+\$([\d,]+\.\d\d)", msg["body"])
    amount = money(m.group(1)) if m else 0.0
    if amount:
        book(client, workspace, date=month_end, memo=f"Prepaid insurance released for {month_end[:7]}",
             lines=[dr("6400", amount, "Insurance expense, monthly share"), cr("1310", amount, "Prepaid insurance")],
             support_name="prepaid-schedule.txt", support=message_text(msg))
    return amount


def depreciation(client: ErpClient, workspace: Path, month_end: str) -> tuple[float, float]:
    """CLO-2.2 from the fixed-asset register; a new asset counts for the whole month."""
    msg = find_message(client, r"fixed-asset|depreciation")
    if msg is None:
        return 0.0, 0.0
    body = msg["body"]
    machinery = 0.0
    stated = re.search(r"Machinery depreciation for \w+ is (?:therefore )?\$([\d,]+\.\d\d)", body)
    if stated:
        machinery = money(stated.group(1))
    else:
        base = re.search(r"Machinery[^\n]*?\$([\d,]+\.\d\d) a month", body)
        machinery = money(base.group(1)) if base else 0.0
        new = re.search(r"cost of \$([\d,]+\.\d\d)[^\n]*?\((\d+) months\)", body)
        if new:
            machinery += round(money(new.group(1)) / int(new.group(2)), 2)
    bld = re.search(r"Buildings:\s+\$([\d,]+\.\d\d)", body)
    buildings = money(bld.group(1)) if bld else 0.0
    lines = [dr("6450", machinery + buildings, f"Depreciation, {month_end[:7]}")]
    if machinery:
        lines.append(cr("1510", machinery, "Accumulated depreciation - machinery"))
    if buildings:
        lines.append(cr("1550", buildings, "Accumulated depreciation - buildings"))
    book(client, workspace, date=month_end, memo=f"Depreciation for {month_end[:7]} per the fixed-asset register",
         lines=lines, support_name="fixed-asset-register.txt", support=message_text(msg))
    return machinery, buildings


def payroll(client: ErpClient, workspace: Path, month_end: str) -> float:
    """CLO-2.1 from the payroll register."""
    msg = find_message(client, r"payroll register")
    if msg is None:
        return 0.0
    body = msg["body"]

    def amount(label: str) -> float:
        m = re.search(label + r"[^\n$]*:\s*\$([\d,]+\.\d\d)", body, re.I)
        return money(m.group(1)) if m else 0.0
    wages, taxes, travel = amount(r"Gross wages"), amount(r"Employer payroll taxes"), amount(r"Travel")
    lines = [dr("6000", wages, "Wages earned, paid after month end"),
             dr("6050", taxes, "Employer payroll taxes"),
             cr("2110", wages + travel, "Accrued payroll: wages and reimbursements"),
             cr("2120", taxes, "Payroll taxes payable")]
    if travel:
        lines.insert(2, dr("6600", travel, "Travel reimbursed through payroll"))
    book(client, workspace, date=month_end, memo=f"Payroll accrual for {month_end[:7]} from the payroll register",
         lines=lines, support_name="payroll-register.txt", support=message_text(msg))
    return wages + taxes + travel


def first_day(client: ErpClient, workspace: Path) -> None:
    """The checklist (CLO-2.1 to CLO-2.5), cutoff first."""
    month_end, next_first = month_bounds(client)
    cut = cutoff(client, workspace, month_end, next_first)
    ins = prepaid(client, workspace, month_end)
    mach, bld = depreciation(client, workspace, month_end)
    pay = payroll(client, workspace, month_end)
    (workspace / STATE_FILE).write_text(
        f"month_end={month_end}\nnext_first={next_first}\ncutoff={';'.join(cut)}\ninsurance={ins:.2f}\n"
        f"machinery={mach:.2f}\nbuildings={bld:.2f}\npayroll={pay:.2f}\n", encoding="utf-8")


# -- turn 2 ------------------------------------------------------------------------------------

def returned_entries(client: ErpClient, workspace: Path) -> None:
    """Fix what the controller returned: an accrual without support gets the vendor's
    confirmation attached (CLO-1.2, CLO-2.4) and goes back for approval."""
    for e in my_manual_entries(client):
        if e["status"] != "returned":
            continue
        full = client.get(f"/journal-entries/{e['id']}")
        if not full.get("attachments"):
            msg = None
            for m in client.inbox("accounting"):
                body = client.read_message(m["id"])
                total = f"{float(full['total']):,.2f}"
                if total in body.get("body", "") and "token" not in body.get("body", "").lower():
                    msg = body
                    break
            if msg is None:
                continue
            attach(client, e["id"], f"support-{e['id']}.txt", message_text(msg))
        finish(client, e["id"], approval_threshold(workspace))


def tie_out(client: ErpClient, month_end: str) -> list[dict[str, Any]]:
    """CLO-3.1: the control-ties report at the month end for inventory, AP and GRNI."""
    report = client.report("control-ties", as_of=month_end)
    return [r for r in report["rows"] if r["account"] in TIE_ACCOUNTS]


def second_day(client: ErpClient, workspace: Path) -> None:
    """Returned entries, then the tie-outs, reported to the controller."""
    state = read_state(workspace)
    returned_entries(client, workspace)
    rows = tie_out(client, state["month_end"])
    lines = [f"{r['name']} ({r['account']}): ledger {r['gl']:,.2f}, subledger {r['subledger']:,.2f}, "
             + ("no difference." if r["tied"] else f"difference {r['difference']:,.2f}.") for r in rows]
    subject = f"Tie-outs at {state['month_end']}"

    def sent() -> Any:
        return next((m for m in client.list_all("/outbox") if m.get("subject") == subject), None)
    if not sent():
        body = {"to": CONTROLLER, "subject": subject,
                "body": "Priya,\n\n" + "\n".join(lines) + "\n\nOmar"}
        checked_write(lambda: client.post("/outbox", body), sent)


# -- turn 3 ------------------------------------------------------------------------------------

def read_state(workspace: Path) -> dict[str, str]:
    text = (workspace / STATE_FILE).read_text(encoding="utf-8") if (workspace / STATE_FILE).exists() else ""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def third_day(client: ErpClient, workspace: Path) -> None:
    """CLO-4.1: the close notes, from what the ERP now holds."""
    state = read_state(workspace)
    month_end = state["month_end"]
    notes = [f"# Close notes, {month_end[:7]}", "", "## Entries booked", ""]
    still_open: list[str] = []
    for e in sorted(my_manual_entries(client), key=lambda x: (x["entry_date"], x["id"])):
        in_month = e["entry_date"][:7] == month_end[:7]
        if not in_month and not (e["entry_date"] == state["next_first"] and "cutoff" in e["memo"].lower()):
            continue
        status = e["status"]
        notes.append(f"- {e['id']} dated {e['entry_date']}: {e['memo']}, ${float(e['total']):,.2f} ({status}).")
        if status != "posted":
            still_open.append(f"{e['id']} ({e['memo']}) is {status}, not posted.")
    notes += ["", "## Tie-outs at " + month_end, ""]
    for r in tie_out(client, month_end):
        verdict = "ties to its subledger" if r["tied"] else f"does NOT tie: difference ${r['difference']:,.2f}"
        label = {"1200": "Inventory", "2000": "Accounts payable", "2050": "GRNI (goods received not invoiced)"}[r["account"]]
        side = "debit" if r["gl"] >= 0 else "credit"
        notes.append(f"- {label}, account {r['account']}: balance ${abs(r['gl']):,.2f} {side} at {month_end}; "
                     f"it {verdict}.")
        if not r["tied"]:
            still_open.append(f"{label} difference of ${r['difference']:,.2f} reported to the controller.")
    notes += ["", "## Revenue cutoff", ""]
    for item in filter(None, state.get("cutoff", "").split(";")):
        ship, inv, amount, shipped, billed = item.split("|")
        notes.append(f"- The cut-off covers shipment {ship}, shipped {shipped} and billed on customer invoice "
                     f"{inv} dated {billed}: ${float(amount):,.2f} before tax accrued at {month_end} and reversed on "
                     f"{state['next_first']}.")
    notes += ["", "## Still open", ""]
    notes += [f"- {s}" for s in still_open] or ["- Nothing is open."]
    (workspace / "close-notes.md").write_text("\n".join(notes) + "\n", encoding="utf-8")


def alt(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
    """Play one day of the close."""
    if turn == 1:
        first_day(client, workspace)
    elif turn == 2:
        second_day(client, workspace)
    elif turn == 3:
        third_day(client, workspace)


POLICIES = {"alt": alt}
