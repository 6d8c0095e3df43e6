"""Vendor response models and routes."""
from __future__ import annotations

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import or_, select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from .schemas import BankAccountIn, DecisionIn, VendorIn, VendorPatch
from .service import create_vendor, reject_bank_account, request_bank_account, update_vendor, verify_bank_account, withdraw_bank_account
from .tables import vendor_bank_accounts, vendors
from .views import bank_account_out, vendor_detail, vendor_out


class BankAccountOut(BaseModel):
    # Another domain has a model of this name, so /openapi.json names this one by its module: keep the
    # name it had before the domain became a package.
    __module__ = "erp_service.domains.vendors"
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
