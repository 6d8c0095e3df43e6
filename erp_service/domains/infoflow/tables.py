"""Information-flow tables, on their own `MetaData` (created only by `install`), the data classes
and the standing role grants."""
from __future__ import annotations

from sqlalchemy import Column, Integer, MetaData, String, Table, Text

#: Separate from `kernel.schema.metadata` on purpose: created only by `install`.
infoflow_metadata = MetaData()

data_classes = Table(
    "data_classes", infoflow_metadata,
    Column("id", String, primary_key=True),
    Column("description", Text, nullable=False),
    Column("sources", Text, nullable=False),            # where the restricted values live
)

data_access = Table(
    "data_access", infoflow_metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("class", String, nullable=False),
    Column("grantee_kind", String, nullable=False),     # role | user | owner
    Column("role_id", String),
    Column("user_id", String),
    Column("record_id", String),                        # user grants: only this owner's records
    Column("purpose", Text),
    Column("valid_from", String),
    Column("valid_to", String),
    Column("granted_by", String),
    Column("granted_on", String),
)

employee_records = Table(
    "employee_records", infoflow_metadata,
    Column("user_id", String, primary_key=True),
    Column("tax_id", String),
    Column("home_address", Text),
    Column("date_of_birth", String),
    Column("personal_phone", String),
    Column("salary_cents", Integer),
)

CLASSES: dict[str, tuple[str, str]] = {
    "vendor_bank": ("Full account and routing numbers of vendor bank accounts, pending ones included.",
                    "vendor_bank_accounts.account_number, vendor_bank_accounts.routing_number"),
    "payroll": ("Wage and payroll-tax lines of payroll entries, and salaries.",
                "journal_lines on accounts 6000/6050 of entries with memo 'Payroll ...'; "
                "employee_records.salary_cents"),
    "employee": ("Employee tax id, home address, date of birth, personal phone.",
                 "employee_records.tax_id, home_address, date_of_birth, personal_phone"),
}

#: Standing visibility by role, used by `install` by default and by `visibility` when a
#: scenario installed nothing.
DEFAULT_ROLE_GRANTS: dict[str, tuple[str, ...]] = {
    "vendor_bank": ("ap_supervisor", "controller"),
    "payroll": ("controller",),
    "employee": ("controller",),
}

GRANTEE_KINDS = ("role", "user", "owner")
