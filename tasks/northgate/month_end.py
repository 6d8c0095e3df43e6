"""Month boundaries during history: the service bills that arrive on the first workday (rent,
power, IT and telecom, packaging, the accountants each quarter) and, on the last workday, the
payroll entry and the depreciation-and-treasury entry — each prepared by the staff accountant,
approved by the controller and posted."""
from __future__ import annotations

import datetime as dt

from erp_service.domains.ledger import account_balances

from .accounting import BILLS, CASH_HIGH, CASH_LOW, CASH_TARGET, bill_lines, month_end_lines
from .history import ACCOUNTANT, History
from .people import CONTROLLER
from .supply import enter_and_approve, invoice_no

#: One month's treasury move at most (cents): keeps the entry inside the controller's limit.
TREASURY_CAP_CENTS = 8_500_000


def first_workday(h: History) -> None:
    """Service bills dated the first of the month, entered on its first workday."""
    month = h.today[:7]
    if h.notes.get("billed_month") == month:
        return
    h.notes["billed_month"] = month
    for bill in BILLS:
        if int(month[5:]) not in bill.months:
            continue
        enter_and_approve(h, {"vendor": bill.vendor, "invoice_no": invoice_no(h, bill.vendor),
                              "invoice_date": f"{month}-01", "memo": f"{bill.key} {month}",
                              "lines": bill_lines(h.rng, bill, int(month[5:]))})


def _is_last_workday(h: History) -> bool:
    d = dt.date.fromisoformat(h.today) + dt.timedelta(days=1)
    while d.weekday() >= 5:
        d += dt.timedelta(days=1)
    return d.month != dt.date.fromisoformat(h.today).month or d.isoformat() > h.end


def _journal(h: History, memo: str, lines: list[dict]) -> None:
    je = h.call(ACCOUNTANT, "POST", "/journal-entries", {"entry_date": h.today, "memo": memo, "lines": lines})
    h.call(ACCOUNTANT, "POST", f"/journal-entries/{je['id']}/submit")
    total = round(sum(l.get("debit", 0) for l in lines) * 100)
    if total >= 500_000:        # the company's approval threshold (journal.threshold_cents)
        h.call(CONTROLLER, "POST", f"/journal-entries/{je['id']}/approve")
    h.call(ACCOUNTANT, "POST", f"/journal-entries/{je['id']}/post")


def last_workday(h: History) -> None:
    """Payroll, depreciation and insurance; then keep cash inside the treasury band with the
    line of credit (repay above the band, draw below it)."""
    if not _is_last_workday(h) or h.today == h.end:
        return
    lines = month_end_lines(h.rng)
    payroll = [l for l in lines if l["account"] in ("6000", "6050", "6600", "1000")]
    other = [l for l in lines if l not in payroll]
    _journal(h, f"Payroll {h.today[:7]}", payroll)
    with h.erp.db.transaction() as conn:
        bal = account_balances(conn)
    cash, loc = bal.get("1000", 0), -bal.get("2500", 0)
    if cash > CASH_HIGH and loc > 0:
        move = min(cash - CASH_TARGET, loc, TREASURY_CAP_CENTS)
        other += [{"account": "2500", "debit": move / 100, "memo": "Line of credit repaid"},
                  {"account": "1000", "credit": move / 100, "memo": "Line of credit repaid"}]
    elif cash > CASH_HIGH:
        move = min(cash - CASH_TARGET, TREASURY_CAP_CENTS)
        other += [{"account": "3100", "debit": move / 100, "memo": "Distribution to shareholders"},
                  {"account": "1000", "credit": move / 100, "memo": "Distribution to shareholders"}]
    elif cash < CASH_LOW:
        move = min(CASH_TARGET - cash, TREASURY_CAP_CENTS)
        other += [{"account": "1000", "debit": move / 100, "memo": "Line of credit drawn"},
                  {"account": "2500", "credit": move / 100, "memo": "Line of credit drawn"}]
    _journal(h, f"Depreciation, insurance and treasury {h.today[:7]}", other)
