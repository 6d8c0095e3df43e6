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

import re
from typing import Any

from fastapi import Depends
from pydantic import BaseModel, Field, field_validator
from sqlalchemy import Column, Integer, String, Table, Text, or_, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..http.lazy_routes import DomainRouter
from ..kernel.errors import invalid, refused
from ..kernel.listing import PageRequest, paginate
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import Tx, register_object
from .comms import ManagerAction, register_escalation_action
from .ledger import accounts, terms

vendors = Table(
    "vendors", metadata,
    Column("id", String, primary_key=True),             # V-0101
    Column("name", String, nullable=False),
    Column("status", String, nullable=False),           # active | inactive
    Column("terms", String, nullable=False),            # terms.id
    Column("tin", String),
    Column("email", String),
    Column("phone", String),                            # the number on file
    Column("address", Text),
    Column("contact", String),
    Column("quality_hold", Integer, nullable=False, default=0),
    Column("remit_account", String),                    # vendor_bank_accounts.id (verified)
    Column("default_account", String),                  # expense account for non-PO lines
    Column("created_on", String),
)

vendor_bank_accounts = Table(
    "vendor_bank_accounts", metadata,
    *doc_columns(),                                     # pending | verified | rejected | retired | withdrawn
    Column("vendor_id", String, nullable=False, index=True),
    Column("bank_name", String, nullable=False),
    Column("account_name", String),
    Column("account_number", String, nullable=False),
    Column("routing_number", String, nullable=False),
    Column("source_ref", String),                       # e.g. the message that asked for the change
    Column("note", Text),
    Column("decided_by", String),
    Column("decided_on", String),
    Column("decision_note", Text),
)

register_object("vendor", vendors)
register_object("vendor_bank_account", vendor_bank_accounts)

VENDOR_STATUSES = ("active", "inactive")


def mask(number: str | None) -> str | None:
    """A bank number shown with only its last four digits."""
    if not number:
        return number
    return "****" + number[-4:]


def bank_account_out(row: dict) -> dict:
    """The API view of a bank account: numbers masked."""
    return {"id": row["id"], "vendor": row["vendor_id"], "status": row["status"], "bank_name": row["bank_name"],
            "account_name": row["account_name"], "account_number": mask(row["account_number"]),
            "routing_number": mask(row["routing_number"]), "source_ref": row["source_ref"], "note": row["note"],
            "requested_by": row["created_by"], "requested_on": row["created_on"],
            "decided_by": row["decided_by"], "decided_on": row["decided_on"],
            "decision_note": row["decision_note"]}


def vendor_out(row: dict) -> dict:
    """The API view of a vendor."""
    return {"id": row["id"], "name": row["name"], "status": row["status"], "terms": row["terms"], "tin": row["tin"],
            "email": row["email"], "phone": row["phone"], "address": row["address"], "contact": row["contact"],
            "quality_hold": bool(row["quality_hold"]), "remit_account": row["remit_account"],
            "default_account": row["default_account"]}


def vendor_detail(tx: Tx, vendor_id: str) -> dict:
    """A vendor with its bank accounts (masked) and, when the purchasing domain has them, agreements."""
    v = tx.get(vendors, vendor_id, "vendor")
    out = vendor_out(v)
    out["bank_accounts"] = [bank_account_out(r) for r in tx.rows(vendor_bank_accounts, vendor_id=vendor_id)]
    agreements = metadata.tables.get("price_agreements")
    if agreements is not None and "vendor_id" in agreements.c:
        out["price_agreements"] = tx.all(select(agreements).where(agreements.c.vendor_id == vendor_id)
                                         .order_by(*agreements.primary_key.columns))
    return out


def next_vendor_id(tx: Tx) -> str:
    """The next free id of the form V-0101 (highest numeric suffix + 1)."""
    best = 100
    for (vid,) in tx.conn.execute(select(vendors.c.id)):
        m = re.fullmatch(r"V-(\d+)", vid)
        if m:
            best = max(best, int(m.group(1)))
    return f"V-{best + 1:04d}"


# Request models ---------------------------------------------------------------------------------

class VendorIn(In):
    """A new vendor."""

    id: str | None = Field(None, pattern=r"^V-\d{4,6}$", description="Leave out to number it automatically.")
    name: str = Field(min_length=1, max_length=200)
    terms: str = "NET30"
    tin: str | None = Field(None, max_length=40)
    email: str | None = Field(None, max_length=200)
    phone: str | None = Field(None, max_length=40)
    address: str | None = Field(None, max_length=500)
    contact: str | None = Field(None, max_length=200)
    quality_hold: bool = False
    default_account: str | None = None


class VendorPatch(In):
    """Fields of a vendor that may change (bank details change only through bank-account requests)."""

    name: str | None = Field(None, min_length=1, max_length=200)
    status: str | None = Field(None, pattern="^(active|inactive)$")
    terms: str | None = None
    tin: str | None = Field(None, max_length=40)
    email: str | None = Field(None, max_length=200)
    phone: str | None = Field(None, max_length=40)
    address: str | None = Field(None, max_length=500)
    contact: str | None = Field(None, max_length=200)
    quality_hold: bool | None = None
    default_account: str | None = None


class BankAccountIn(In):
    """A requested change of remit bank details (enters as pending)."""

    bank_name: str = Field(min_length=1, max_length=200)
    account_name: str | None = Field(None, max_length=200)
    account_number: str = Field(description="4 to 17 digits.")
    routing_number: str = Field(description="9 digits (ABA).")
    source_ref: str | None = Field(None, max_length=100, description="Where the request came from, e.g. a message id.")
    note: str | None = Field(None, max_length=2000)

    @field_validator("account_number")
    @classmethod
    def _acct(cls, v: str) -> str:
        v = v.replace(" ", "").replace("-", "")
        if not re.fullmatch(r"\d{4,17}", v):
            raise ValueError("account_number must be 4 to 17 digits")
        return v

    @field_validator("routing_number")
    @classmethod
    def _routing(cls, v: str) -> str:
        v = v.replace(" ", "").replace("-", "")
        if not re.fullmatch(r"\d{9}", v):
            raise ValueError("routing_number must be 9 digits")
        return v


class DecisionIn(In):
    """An optional note with a verify/reject/withdraw decision."""

    note: str | None = Field(None, max_length=2000)


# Service functions --------------------------------------------------------------------------------

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


# Response models ----------------------------------------------------------------------------------

class BankAccountOut(BaseModel):
    id: str
    vendor: str
    status: str
    bank_name: str
    account_name: str | None = None
    account_number: str
    routing_number: str
    source_ref: str | None = None
    note: str | None = None
    requested_by: str | None = None
    requested_on: str
    decided_by: str | None = None
    decided_on: str | None = None
    decision_note: str | None = None


class VendorOut(BaseModel):
    id: str
    name: str
    status: str
    terms: str
    tin: str | None = None
    email: str | None = None
    phone: str | None = None
    address: str | None = None
    contact: str | None = None
    quality_hold: bool
    remit_account: str | None = None
    default_account: str | None = None


class VendorDetail(VendorOut):
    bank_accounts: list[BankAccountOut]
    price_agreements: list[dict] | None = None


# Routes -------------------------------------------------------------------------------------------

router = DomainRouter(tags=["vendors"])


@router.get("/vendors", response_model=Envelope[Page[VendorOut]], summary="List vendors (filters: status, q in name/id)")
def list_vendors(status: str | None = None, q: str | None = None, page: PageRequest = Depends(page_params),
                 api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(vendors).order_by(vendors.c.id)
        if q:
            like = f"%{q}%"
            stmt = stmt.where(or_(vendors.c.name.ilike(like), vendors.c.id.ilike(like)))
        return paginate(tx, stmt, page, render=vendor_out, status=status)
    return api.read(fn)


@router.get("/vendors/{vendor_id}", response_model=Envelope[VendorDetail],
            summary="One vendor with its bank accounts (masked) and price agreements")
def get_vendor(vendor_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: vendor_detail(tx, vendor_id), object_type="vendor", object_id=vendor_id)


@router.post("/vendors", operation_id="vendor.create", status_code=201, response_model=Envelope[VendorDetail],
             summary="Create a vendor")
def post_vendor(body: VendorIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_vendor(tx, body))


@router.patch("/vendors/{vendor_id}", operation_id="vendor.update", response_model=Envelope[VendorDetail],
              summary="Change a vendor's master data (no bank fields)")
def patch_vendor(vendor_id: str, body: VendorPatch, api: Api = Depends(write_api)):
    return api.write(lambda tx: update_vendor(tx, vendor_id, body), object_type="vendor", object_id=vendor_id)


@router.post("/vendors/{vendor_id}/bank-accounts", operation_id="vendor.bank.request", status_code=201,
             response_model=Envelope[BankAccountOut],
             summary="Request new remit bank details (enters as pending; someone else verifies)")
def post_bank_account(vendor_id: str, body: BankAccountIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: request_bank_account(tx, vendor_id, body))


@router.get("/vendor-bank-accounts", response_model=Envelope[Page[BankAccountOut]],
            summary="List vendor bank accounts, masked (filters: status, vendor)")
def list_bank_accounts(status: str | None = None, vendor: str | None = None,
                       page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(vendor_bank_accounts).order_by(vendor_bank_accounts.c.id), page,
                                        render=bank_account_out, status=status, vendor_id=vendor))


@router.post("/vendor-bank-accounts/{account_id}/verify", operation_id="vendor.bank.verify", status_code=201,
             response_model=Envelope[BankAccountOut],
             summary="Verify a pending bank account (soft control: call the number on file first)")
def verify(account_id: str, body: DecisionIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: verify_bank_account(tx, account_id, body),
                     object_type="vendor_bank_account", object_id=account_id)


@router.post("/vendor-bank-accounts/{account_id}/reject", operation_id="vendor.bank.reject", status_code=201,
             response_model=Envelope[BankAccountOut], summary="Reject a pending bank account")
def reject(account_id: str, body: DecisionIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: reject_bank_account(tx, account_id, body),
                     object_type="vendor_bank_account", object_id=account_id)


@router.post("/vendor-bank-accounts/{account_id}/withdraw", operation_id="vendor.bank.withdraw", status_code=201,
             response_model=Envelope[BankAccountOut],
             summary="Withdraw a pending request, or retire a verified account")
def withdraw(account_id: str, body: DecisionIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: withdraw_bank_account(tx, account_id, body),
                     object_type="vendor_bank_account", object_id=account_id)


# Escalation actions -------------------------------------------------------------------------------

def _bank_decision(kind: str) -> ManagerAction:
    """A manager action that verifies or rejects the escalated (or named) vendor bank account."""
    fn = {"verify": verify_bank_account, "reject": reject_bank_account}[kind]

    def handler(day: Any, user_id: str, esc: dict, spec: dict) -> None:
        account_id = spec.get("account_id") or esc["record_id"]
        body = DecisionIn(note=spec.get("note") or f"{kind} on escalation {esc['id']}")
        day.act(user_id, f"vendor.bank.{kind}", f"/vendor-bank-accounts/{account_id}/{kind}", body.model_dump(),
                lambda tx: fn(tx, account_id, body))
    handler.__doc__ = f"{kind.capitalize()} the escalated (or named) vendor bank account."
    return handler


register_escalation_action("verify_bank_account", _bank_decision("verify"))
register_escalation_action("reject_bank_account", _bank_decision("reject"))
