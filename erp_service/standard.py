"""The standard company skeleton every scenario starts from: chart of accounts with its
control accounts, posting rules, payment terms and monthly periods. Generators add people,
items, parties and history on top (tasks/northgate)."""
from __future__ import annotations

import datetime as dt

from .domains.ledger import accounts, periods, posting_rules, terms

#: (id, name, type, control key or None)
CHART: list[tuple[str, str, str, str | None]] = [
    ("1000", "Operating cash", "asset", None),
    ("1010", "Payroll cash", "asset", None),
    ("1020", "Petty cash", "asset", None),
    ("1100", "Accounts receivable", "asset", "ar"),
    ("1150", "Allowance for doubtful accounts", "asset", None),
    ("1200", "Inventory - raw materials", "asset", "inventory"),
    ("1210", "Work in process", "asset", "wip"),
    ("1300", "Prepaid expenses", "asset", None),
    ("1310", "Prepaid insurance", "asset", None),
    ("1400", "Vendor advances", "asset", None),
    ("1500", "Machinery and equipment", "asset", None),
    ("1510", "Accumulated depreciation - machinery", "asset", None),
    ("1520", "Vehicles", "asset", None),
    ("1530", "Accumulated depreciation - vehicles", "asset", None),
    ("1540", "Buildings", "asset", None),
    ("1550", "Accumulated depreciation - buildings", "asset", None),
    ("2000", "Accounts payable", "liability", "ap"),
    ("2050", "Goods received not invoiced", "liability", "grni"),
    ("2100", "Accrued liabilities", "liability", None),
    ("2110", "Accrued payroll", "liability", None),
    ("2120", "Payroll taxes payable", "liability", None),
    ("2200", "Sales tax payable", "liability", None),
    ("2300", "Unapplied cash", "liability", "unapplied_cash"),
    ("2400", "Customer deposits", "liability", None),
    ("2500", "Line of credit", "liability", None),
    ("2600", "Long-term debt", "liability", None),
    ("3000", "Common stock", "equity", None),
    ("3100", "Retained earnings", "equity", None),
    ("4000", "Product sales", "revenue", None),
    ("4010", "Parts sales", "revenue", None),
    ("4100", "Sales discounts", "revenue", None),
    ("4200", "Sales returns and allowances", "revenue", None),
    ("4300", "Freight billed", "revenue", None),
    ("4900", "Other income", "revenue", None),
    ("5000", "Cost of goods sold", "expense", None),
    ("5100", "Purchase price variance", "expense", None),
    ("5110", "Invoice price variance", "expense", None),
    ("5200", "Manufacturing variance", "expense", None),
    ("5300", "Inventory adjustments", "expense", None),
    ("5400", "Freight in", "expense", None),
    ("5500", "Purchase discounts taken", "expense", None),
    ("5600", "Scrap", "expense", None),
    ("6000", "Wages", "expense", None),
    ("6050", "Payroll taxes", "expense", None),
    ("6100", "Rent", "expense", None),
    ("6150", "Utilities", "expense", None),
    ("6200", "Repairs and maintenance", "expense", None),
    ("6250", "Calibration services", "expense", None),
    ("6300", "Office supplies", "expense", None),
    ("6350", "Shop supplies", "expense", None),
    ("6400", "Insurance", "expense", None),
    ("6450", "Depreciation", "expense", None),
    ("6500", "Professional fees", "expense", None),
    ("6550", "IT and software", "expense", None),
    ("6600", "Travel", "expense", None),
    ("6650", "Bank fees", "expense", None),
    ("6700", "Telephone", "expense", None),
    ("6750", "Sales tax expense", "expense", None),
    ("6800", "Interest expense", "expense", None),
    ("6900", "Miscellaneous expense", "expense", None),
]

POSTING_RULES: dict[str, str] = {
    "cash": "1000", "ar": "1100", "inventory": "1200", "wip": "1210", "ap": "2000", "grni": "2050",
    "unapplied_cash": "2300", "revenue": "4000", "sales_discounts": "4100", "freight_billed": "4300",
    "cogs": "5000", "ppv": "5100", "ipv": "5110", "mfg_variance": "5200",
    "inventory_adjustment": "5300", "freight_in": "5400", "purchase_discounts": "5500",
    "purchase_tax": "6750", "sales_tax": "2200", "bank_fees": "6650", "scrap": "5600",
    "retained_earnings": "3100",
}

#: code: (description, net days, discount percent, discount days)
TERMS: dict[str, tuple[str, int, float, int]] = {
    "NET30": ("Net 30", 30, 0.0, 0),
    "NET45": ("Net 45", 45, 0.0, 0),
    "NET60": ("Net 60", 60, 0.0, 0),
    "2/10N30": ("2% 10, net 30", 30, 2.0, 10),
    "1/10N30": ("1% 10, net 30", 30, 1.0, 10),
    "DUE": ("Due on receipt", 0, 0.0, 0),
}


def month_periods(first: str, last: str) -> list[dict[str, str]]:
    """Monthly periods covering `first`..`last` (ISO dates), all open."""
    start = dt.date.fromisoformat(first).replace(day=1)
    end = dt.date.fromisoformat(last)
    out = []
    while start <= end:
        nxt = (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
        out.append({"id": start.strftime("%Y-%m"), "start_date": start.isoformat(),
                    "end_date": (nxt - dt.timedelta(days=1)).isoformat(), "status": "open"})
        start = nxt
    return out


def install_standard(builder, *, first_period: str, last_period: str) -> None:
    """Install the chart, posting rules, terms and periods into a CompanyBuilder's database."""
    builder.insert_many(accounts, [{"id": a, "name": n, "type": t, "control": c, "department_id": None,
                                    "active": 1} for a, n, t, c in CHART])
    builder.insert_many(posting_rules, [{"key": k, "account_id": v} for k, v in POSTING_RULES.items()])
    builder.insert_many(periods, month_periods(first_period, last_period))
    builder.insert_many(terms, [{"id": k, "description": d, "net_days": n, "discount_pct": p,
                                 "discount_days": dd} for k, (d, n, p, dd) in TERMS.items()])
