"""How vendors and their bank accounts are shown (account and routing numbers masked)."""
from __future__ import annotations

from sqlalchemy import select

from ...kernel.schema import metadata
from ...kernel.tx import Tx
from .tables import vendor_bank_accounts, vendors


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
