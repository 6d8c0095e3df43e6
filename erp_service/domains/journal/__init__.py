"""Manual journal entries, their support attachments, periods, and the ledger's read routes
(`/accounts`, `/periods`, `/terms`, `/budgets`, `/journal-entries`).

Manual entry lifecycle: draft → submitted → approved → posted → reversed; submitted/approved
can be returned (→ returned, editable again like a draft). Only draft/returned entries can be
edited. An entry needs at least two lines and must balance. The preparer cannot approve it;
at or above the company's `je_approval_threshold_cents` (default 500,000 = $5,000) it must be
approved before posting; below it, it can be posted straight from draft/returned/submitted.

Control accounts (AP, AR, GRNI, inventory, WIP, unapplied cash) are kept by their subledgers, so
manual lines cannot post to them (`control_account`), and an entry that carries subledger
postings — any system entry — cannot be reversed here (`subledger_entry`): its own document
(void the invoice, reverse the receipt …) undoes it, so every control account stays tied to its
subledger. A manual entry already on a control account (history, a migration) can be reversed:
it moved the account without a document, and its reversal restores the tie.

The journal's counterparties (`actors`, from the sections in `world`): a reviewer returns or
approves (and posts) submitted manual entries, and periods are closed on set days.
"""
from __future__ import annotations

# The counterparties last, after every domain the journal's tables pulled in (the world sections and
# actors register in import order, as the flat `journal_review` module did after `journal`).
from . import actors, world  # noqa: E402, F401  (the reviewer and the period close; the sections they read)
from .routes import router
from .schemas import NoteIn
from .service import approve_entry, close_period, post_entry, return_entry
from .tables import attachments

__all__ = ["router", "NoteIn", "approve_entry", "attachments", "close_period", "post_entry", "return_entry"]
