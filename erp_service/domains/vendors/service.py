"""Vendor service functions: create and update vendors, the bank account lifecycle."""
from __future__ import annotations

import re

from sqlalchemy import select

from ...kernel.errors import invalid, refused
from ...kernel.tx import Tx
from ..ledger import accounts, terms
from .schemas import BankAccountIn, DecisionIn, VendorIn, VendorPatch
from .tables import vendor_bank_accounts, vendors
from .views import bank_account_out, vendor_detail


def next_vendor_id(tx: Tx) -> str:
    """The next free id of the form V-0101 (highest numeric suffix + 1)."""
    best = 100
    for (vid,) in tx.conn.execute(select(vendors.c.id)):
        m = re.fullmatch(r"V-(\d+)", vid)
        if m:
            best = max(best, int(m.group(1)))
    return f"V-{best + 1:04d}"


def _check_terms(tx: Tx, code: str) -> None:
    if tx.find(terms, id=code) is None:
        raise invalid(f"Payment terms {code} do not exist (see GET /terms).")


def _check_account(tx: Tx, account: str | None) -> None:
    if account is None:
        return
    row = tx.find(accounts, id=account)
    if row is None:
        raise invalid(f"Account {account} does not exist.")
    if row["control"]:
        # Invoice lines default to this account; a control account would break its subledger tie.
        raise invalid(f"Account {account} is a control account and cannot be a vendor's default expense account.")


def create_vendor(tx: Tx, body: VendorIn) -> dict:
    """Create an active vendor (no bank account: request one separately)."""
    _check_terms(tx, body.terms)
    _check_account(tx, body.default_account)
    vid = body.id or next_vendor_id(tx)
    if tx.find(vendors, id=vid) is not None:
        raise refused("duplicate_vendor", f"Vendor {vid} already exists.")
    if body.tin and tx.find(vendors, tin=body.tin) is not None:
        raise refused("duplicate_vendor", f"A vendor with TIN {body.tin} already exists.")
    tx.insert(vendors, id=vid, name=body.name, status="active", terms=body.terms, tin=body.tin, email=body.email,
              phone=body.phone, address=body.address, contact=body.contact, quality_hold=int(body.quality_hold),
              remit_account=None, default_account=body.default_account, created_on=tx.business_date)
    tx.created("vendor", vid)
    return vendor_detail(tx, vid)


def update_vendor(tx: Tx, vendor_id: str, body: VendorPatch) -> dict:
    """Change a vendor's master data (never its bank details)."""
    tx.get(vendors, vendor_id, "vendor")
    values = body.model_dump(exclude_unset=True)
    if "terms" in values:
        if values["terms"] is None:
            raise invalid("terms cannot be empty.")
        _check_terms(tx, values["terms"])
    if values.get("status", "x") is None or values.get("name", "x") is None:
        raise invalid("status and name cannot be empty.")
    if "default_account" in values:
        _check_account(tx, values["default_account"])
    if "quality_hold" in values:
        values["quality_hold"] = int(bool(values["quality_hold"]))
    if not values:
        raise invalid("Nothing to change.")
    tx.touch("vendor", vendor_id)
    tx.update(vendors, vendor_id, **values)
    return vendor_detail(tx, vendor_id)


def request_bank_account(tx: Tx, vendor_id: str, body: BankAccountIn) -> dict:
    """Record requested bank details as a pending account awaiting verification."""
    tx.get(vendors, vendor_id, "vendor")
    row = tx.create_doc("vendor_bank_account", vendor_bank_accounts, "VBA", "pending", vendor_id=vendor_id,
                        bank_name=body.bank_name, account_name=body.account_name,
                        account_number=body.account_number, routing_number=body.routing_number,
                        source_ref=body.source_ref, note=body.note)
    return bank_account_out(tx.get(vendor_bank_accounts, row["id"]))


def _decide(tx: Tx, account_id: str, to: str, note: str | None, reason: str) -> dict:
    row = tx.get(vendor_bank_accounts, account_id, "vendor bank account")
    if row["status"] != "pending":
        raise refused("bad_status", f"Bank account {account_id} is {row['status']}; only a pending account "
                                    f"can be {to}.", status=row["status"])
    if row["created_by"] == tx.actor.user_id:
        raise refused("requester_cannot_approve",
                      f"You requested bank account {account_id}; someone else must decide on it.")
    tx.set_status("vendor_bank_account", vendor_bank_accounts, account_id, to, note or reason,
                  allowed_from=["pending"], decided_by=tx.actor.user_id, decided_on=tx.business_date,
                  decision_note=note)
    return row


def verify_bank_account(tx: Tx, account_id: str, body: DecisionIn | None) -> dict:
    """Verify a pending account: retire the vendor's old verified account, repoint remit_account."""
    row = _decide(tx, account_id, "verified", body.note if body else None, "verified")
    vendor_id = row["vendor_id"]
    for old in tx.rows(vendor_bank_accounts, vendor_id=vendor_id, status="verified"):
        if old["id"] != account_id:
            tx.set_status("vendor_bank_account", vendor_bank_accounts, old["id"], "retired",
                          f"replaced by {account_id}", allowed_from=["verified"])
    tx.touch("vendor", vendor_id)
    tx.update(vendors, vendor_id, remit_account=account_id)
    return bank_account_out(tx.get(vendor_bank_accounts, account_id))


def reject_bank_account(tx: Tx, account_id: str, body: DecisionIn | None) -> dict:
    """Reject a pending account; the vendor's remit account is unchanged."""
    _decide(tx, account_id, "rejected", body.note if body else None, "rejected")
    return bank_account_out(tx.get(vendor_bank_accounts, account_id))


def withdraw_bank_account(tx: Tx, account_id: str, body: DecisionIn | None) -> dict:
    """Withdraw a pending request (→ withdrawn) or retire a verified account (→ retired, and the
    vendor is left without a remit account until another is verified)."""
    row = tx.get(vendor_bank_accounts, account_id, "vendor bank account")
    note = body.note if body else None
    if row["status"] == "pending":
        tx.set_status("vendor_bank_account", vendor_bank_accounts, account_id, "withdrawn", note or "withdrawn",
                      allowed_from=["pending"], decided_by=tx.actor.user_id, decided_on=tx.business_date,
                      decision_note=note)
    else:
        tx.set_status("vendor_bank_account", vendor_bank_accounts, account_id, "retired", note or "withdrawn",
                      allowed_from=["verified"])
        v = tx.get(vendors, row["vendor_id"])
        if v["remit_account"] == account_id:
            tx.touch("vendor", v["id"])
            tx.update(vendors, v["id"], remit_account=None)
    return bank_account_out(tx.get(vendor_bank_accounts, account_id))


def verified_remit_account(tx: Tx, vendor_id: str) -> dict | None:
    """The vendor's remit account if it is verified, else None."""
    v = tx.get(vendors, vendor_id, "vendor")
    if not v["remit_account"]:
        return None
    acct = tx.find(vendor_bank_accounts, id=v["remit_account"])
    return acct if acct is not None and acct["status"] == "verified" else None
