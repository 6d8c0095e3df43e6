"""Communication: inboxes per box and the outbox, PDF attachments, dispositions, escalations
with reason codes, and phone calls with scripted transcripts; plus the manager actor that
answers escalations by the scenario's rules.

Helper API for other domains and for scenario generators (call inside a `Tx`):

- `deliver(tx, box, sender, subject, body, attachments=[(filename, bytes)], ...)` puts a
  message in a box (counterparties: vendors send invoices to ``ap``, packing slips to
  ``receiving``);
- `make_pdf(title, lines) -> bytes` writes a small, deterministic PDF (same inputs, same bytes);
  `pdf_text(data) -> list[str]` reads its text lines back;
- `register_escalation_action(kind, handler)` lets a domain teach the manager actor an action
  (payables registers ``release_hold`` and ``approve_invoice``, vendors ``verify_bank_account``
  and ``reject_bank_account``; see `ManagerAction`).

World file sections read here (never free text the agent wrote):

``calls``: a list of scripted answers::

    {"party_type": "vendor", "party_id": "V-0101", "number": "+1 555 010 2000" | "on_file",
     "from": "2026-10-09" (optional), "transcript": "..."}

  matched on party and dialled number (last 10 digits; ``on_file`` = whatever number is on file
  when the call is made) with ``from`` <= today; the latest ``from`` wins, then the later entry.
  No match: "The line rang out."

``escalations``: a list of rules (or ``{"rules": [...]}``)::

    {"record_id": "APINV-10004" | "*", "record_type": "ap_invoice" (optional),
     "reason": "price_variance", "to": "maya.chen" (optional), "decision": "text",
     "actions": [{"kind": "reply", "subject": "...", "body": "...", "box": "ap" (optional)},
                 {"kind": "release_hold", "hold_reason": "price" (optional), "hold_id": ... (optional)},
                 {"kind": "approve_invoice"}, {"kind": "verify_bank_account"},
                 {"kind": "reject_bank_account"}, {"kind": "keep_hold"} | {"kind": "none"}]}

  Action handlers act as the addressee through ordinary audited writes (a refusal — say the
  addressee lacks the permission — is audited and the day goes on).

  The first rule whose record, reason and addressee match an open escalation is applied by the
  escalation's addressee on the next business day. An escalation no rule matches is left open:
  a structured action sent to the wrong person or with the wrong reason gets only what the
  scenario defines for it (usually nothing).

Modules: `tables`, `pdf`, `mail` (boxes, delivery, reading, dispositions, the outbox),
`escalations`, `calls`, `world` (the sections above), `managers` (the actor), `schemas`
(request bodies), `routes`.
"""
from __future__ import annotations

from . import managers  # noqa: F401  (registers the manager actor)
from .calls import call_view, party_phone, place_call, scripted_transcript
from .escalations import escalate, escalation_view
from .mail import box_address, deliver, dispose, mail_domain, message_view, message_views, require_box, send_message
from .managers import ESCALATION_ACTIONS, ManagerAction, matching_rule, register_escalation_action
from .pdf import make_pdf, pdf_text
from .routes import router
from .schemas import CallIn, DispositionIn, EscalationIn, OutboxIn
from .tables import (
    REASON_CODES,
    DispositionCode,
    ReasonCode,
    calls,
    dispositions,
    escalations,
    message_attachments,
    message_reads,
    messages,
)
from .world import RANG_OUT, CallScript, EscalationAction, EscalationRule, EscalationRules

__all__ = ["call_view", "party_phone", "place_call", "scripted_transcript", "escalate", "escalation_view",
           "box_address", "deliver", "dispose", "mail_domain", "message_view", "message_views", "require_box",
           "send_message", "ESCALATION_ACTIONS", "ManagerAction", "matching_rule", "register_escalation_action",
           "make_pdf", "pdf_text", "router", "CallIn", "DispositionIn", "EscalationIn", "OutboxIn", "REASON_CODES",
           "DispositionCode", "ReasonCode", "calls", "dispositions", "escalations", "message_attachments",
           "message_reads", "messages", "RANG_OUT", "CallScript", "EscalationAction", "EscalationRule",
           "EscalationRules"]
