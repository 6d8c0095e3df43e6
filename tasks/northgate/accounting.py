"""Northgate's recurring costs and the accounting calendar of its history: monthly service
invoices without a PO (rent, power, IT and telecom, quarterly accounting fees), the month-end
payroll and depreciation entry, the treasury rule for the line of credit, and the budgets that
are drawn from the same plan so budget-vs-actual compares like with like."""
from __future__ import annotations

import random
from dataclasses import dataclass

#: Opening balances on the first day of history (cents, debit positive; non-control accounts).
OPENING = [("1000", 45_000_000), ("1500", 120_000_000), ("1510", -30_000_000), ("1540", 60_000_000),
           ("1550", -12_000_000), ("1310", 2_400_000), ("2500", -40_000_000), ("3000", -10_000_000),
           ("3100", -135_400_000)]


@dataclass(frozen=True)
class ServiceBill:
    """A recurring vendor bill without a PO: its vendor, cadence and lines (account, dollars)."""

    key: str
    vendor: str
    months: tuple[int, ...]                 # calendar months it arrives in
    lines: tuple[tuple[str, str, float], ...]   # (account, description, monthly base in dollars)


BILLS = [
    ServiceBill("rent", "V-0107", tuple(range(1, 13)), (("6100", "Plant and warehouse rent", 8_500.0),)),
    ServiceBill("power", "V-0108", tuple(range(1, 13)), (("6150", "Electricity and gas", 3_600.0),)),
    ServiceBill("it", "V-0109", (1, 4, 7, 10), (("6550", "Managed IT and ERP hosting, quarter", 5_550.0),
                                                 ("6700", "Telephone and internet, quarter", 1_920.0))),
    ServiceBill("audit", "V-0110", (1, 4, 7, 10), (("6500", "Quarterly accounting and tax services", 5_400.0),)),
    ServiceBill("packaging", "V-0102", (2, 5, 8, 11), (("6350", "Cartons, foam and pallets", 4_350.0),
                                                        ("6300", "Office supplies", 780.0))),
]

#: Month-end entry (dollars): payroll paid from operating cash, depreciation, insurance expensed.
PAYROLL = [("6000", "Wages and salaries", 52_000.0), ("6050", "Employer payroll taxes", 4_700.0),
           ("6600", "Travel reimbursed through payroll", 900.0)]
DEPRECIATION = [("1510", 10_000.0), ("1550", 1_667.0)]
INSURANCE = 800.0

#: Which department owns each budgeted account (budget-vs-actual is per account and month).
BUDGET_OWNER = {"6100": "OPS", "6150": "OPS", "6550": "FIN", "6700": "SAL", "6500": "FIN", "6350": "PRD",
                "6300": "PUR", "6000": "EXEC", "6050": "EXEC", "6600": "SAL", "6450": "FIN", "6400": "FIN",
                "5200": "PRD", "5400": "PUR"}

#: Treasury: keep operating cash between these (cents) with the line of credit; repay above.
CASH_LOW, CASH_TARGET, CASH_HIGH = 12_000_000, 20_000_000, 32_000_000


def seasonal(account: str, month: int) -> float:
    """Power costs more in winter and high summer."""
    if account != "6150":
        return 1.0
    return {12: 1.35, 1: 1.4, 2: 1.3, 7: 1.15, 8: 1.2}.get(month, 1.0)


def bill_lines(rng: random.Random, bill: ServiceBill, month: int) -> list[dict]:
    """The lines of one month's bill, amounts varying a little around the plan."""
    out = []
    for account, desc, base in bill.lines:
        amount = round(base * seasonal(account, month) * (1 if bill.key == "rent" else rng.uniform(0.9, 1.1)), 2)
        out.append({"kind": "other", "description": desc, "amount": amount, "account": account})
    return out


def month_end_lines(rng: random.Random) -> list[dict]:
    """The month-end journal lines: payroll (credit cash), depreciation, insurance expensed."""
    lines, cash = [], 0.0
    for account, memo, base in PAYROLL:
        amt = round(base * rng.uniform(0.97, 1.04), 2)
        cash += amt
        lines.append({"account": account, "debit": amt, "memo": memo})
    lines.append({"account": "1000", "credit": round(cash, 2), "memo": "Net payroll and reimbursements paid"})
    dep = sum(a for _, a in DEPRECIATION)
    lines.append({"account": "6450", "debit": round(dep, 2), "memo": "Monthly depreciation"})
    lines += [{"account": acct, "credit": amt, "memo": "Accumulated depreciation"} for acct, amt in DEPRECIATION]
    lines.append({"account": "6400", "debit": INSURANCE, "memo": "Insurance expensed from prepaid"})
    lines.append({"account": "1310", "credit": INSURANCE, "memo": "Prepaid insurance released"})
    return lines


def budget_rows(rng: random.Random, periods: list[str]) -> list[dict]:
    """Budgets per department, account and month, from the cost plan (plus a small cushion)."""
    plan: dict[str, dict[int, float]] = {}
    for bill in BILLS:
        for account, _, base in bill.lines:
            for m in range(1, 13):
                if m in bill.months:
                    plan.setdefault(account, {})[m] = base * seasonal(account, m)
    for account, _, base in PAYROLL:
        plan[account] = {m: base for m in range(1, 13)}
    plan["6450"] = {m: sum(a for _, a in DEPRECIATION) for m in range(1, 13)}
    plan["6400"] = {m: INSURANCE for m in range(1, 13)}
    plan["5400"] = {m: 900.0 for m in range(1, 13)}
    plan["5200"] = {m: 250.0 for m in range(1, 13)}
    rows = []
    for account in sorted(plan):
        for period in periods:
            month = int(period[5:7])
            base = plan[account].get(month, 0.0)
            if base <= 0:
                continue
            amount = round(base * rng.uniform(1.0, 1.08) / 100) * 100
            rows.append({"department_id": BUDGET_OWNER[account], "account_id": account, "period_id": period,
                         "amount_cents": int(amount * 100)})
    return rows
