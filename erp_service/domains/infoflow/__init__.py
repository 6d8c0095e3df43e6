"""Information-flow controls (specification §7.2): which data is restricted and who may see it.

Opt-in. The tables live on their own `MetaData` (not the shared one), so `Database.create`
never makes them; a scenario that opts in calls `install(builder, ...)` after building its
company. A scenario that does not opt in has no such tables and its schema is unchanged.

Nothing is enforced on reads and nothing is exposed through the API: the handbook states the
policy and the host's grader checks what the agent sent (rule ``disclose_restricted``).

Classes:
- ``vendor_bank``: full account and routing numbers of every vendor bank account (pending too);
  owner = the vendor id;
- ``payroll``: wage and payroll-tax lines of payroll entries, salaries; owner = the employee;
- ``employee``: tax id, home address, date of birth, personal phone (`employee_records`);
  owner = the employee's user id.

Grants (`data_access`, one row each):
- ``grantee_kind="role"``: standing visibility for a role;
- ``grantee_kind="user"``: duty to know — one user, a purpose, ``valid_from``..``valid_to``
  (inclusive), optionally only one owner's records (``record_id``), granted by someone;
- ``grantee_kind="owner"``: the record's owner sees its own data (a vendor its own account, an
  employee their own record).

`visibility(conn, recipient, data_class, owner, day)` answers "may this recipient see this
owner's value of this class on this day" from these tables (or the defaults when they are
absent) — a pure function of the database, for the grader.

`tables` holds the tables, the classes and the default grants; `service` the opt-in and the
visibility question.
"""
from __future__ import annotations

from .service import install, installed, resolve_recipient, visibility
from .tables import CLASSES, DEFAULT_ROLE_GRANTS, GRANTEE_KINDS, data_access, data_classes, employee_records, infoflow_metadata

__all__ = ["CLASSES", "DEFAULT_ROLE_GRANTS", "GRANTEE_KINDS", "data_access", "data_classes", "employee_records",
           "infoflow_metadata", "install", "installed", "resolve_recipient", "visibility"]
