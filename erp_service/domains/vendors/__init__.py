"""Vendors and their bank accounts.

Bank details never change in place: a new account enters as ``pending`` (vendor.bank.request)
and becomes ``verified`` or ``rejected`` by someone other than the requester; verifying retires
the vendor's previous verified account and points `vendors.remit_account` at the new one. A
pending request can be withdrawn; a verified account can be withdrawn (retired), which leaves
the vendor with no remit account. Account and routing numbers are stored in full and shown
masked (last four digits) in every API read. Calling the number on file before verifying is a
soft control (graded from the audit log), not enforced here.
"""
from __future__ import annotations

from . import escalations  # noqa: F401  (the managers' bank-account actions)
from .routes import router
from .schemas import BankAccountIn
from .service import request_bank_account, verified_remit_account
from .tables import vendor_bank_accounts, vendors
from .views import mask

__all__ = ["router", "BankAccountIn", "mask", "request_bank_account", "vendor_bank_accounts", "vendors",
           "verified_remit_account"]
