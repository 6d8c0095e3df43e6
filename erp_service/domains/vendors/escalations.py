"""The managers' actions on escalated bank-account decisions (registered with comms)."""
from __future__ import annotations

from typing import Any

from ..comms import ManagerAction, register_escalation_action
from .schemas import DecisionIn
from .service import reject_bank_account, verify_bank_account


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
