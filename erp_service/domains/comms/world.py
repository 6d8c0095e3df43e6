"""The world sections comms reads: scripted call answers and the managers' escalation rules."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...sim import SectionModel, WorldDate, world_section

RANG_OUT = "The line rang out."


class CallScript(SectionModel):
    """``calls[]``: what a party says when called on a number (``on_file``: the number on file
    at the time of the call), from a date on."""

    party_type: Literal["vendor", "customer", "user"] | None = None
    party_id: str
    number: str = "on_file"
    start: WorldDate | None = Field(None, alias="from")
    transcript: str = RANG_OUT


class EscalationAction(SectionModel):
    """One action of an escalation rule (``kind``: reply, keep_hold, none, or a registered
    manager action such as release_hold); the other fields are the action's parameters."""

    kind: str
    subject: str | None = None
    body: str | None = None
    box: str | None = None
    note: str | None = None
    hold_id: str | None = None
    hold_reason: str | None = None
    invoice_id: str | None = None
    account_id: str | None = None


class EscalationRule(SectionModel):
    """``escalations[]``: how the addressee answers a matching open escalation."""

    record_id: str = "*"
    record_type: str | None = None
    reason: str
    to: str | None = None
    decision: str | None = None
    actions: list[EscalationAction] = []


class EscalationRules(SectionModel):
    """The other spelling of ``escalations``: ``{"rules": [...]}``."""

    rules: list[EscalationRule] = []


world_section("calls", list[CallScript], owner=__name__, doc="scripted answers to phone calls")


world_section("escalations", list[EscalationRule] | EscalationRules, owner=__name__,
              doc="how managers answer escalations")
