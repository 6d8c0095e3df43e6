"""General ledger core: accounts, posting rules, periods, journal entries and lines, and the
one function every domain posts through (`post`). Subledger-owning domains register a balance
function (`register_subledger`) so control ties can be checked for every control account.

The journal-entry lifecycle routes (manual entries: draft → submitted → approved → posted →
reversed), attachments and period close/reopen live in `journal`.

`tables` holds the tables, `service` the posting (`post`, `Line`, `period_for`, the posting
observers), `balances` the balances, the trial balance and the control ties against the
registered subledgers.
"""
from __future__ import annotations

from .balances import SUBLEDGERS, SubledgerFn, account_balances, control_ties, register_subledger, trial_balance
from .service import POSTING_OBSERVERS, Line, PostingObserver, entry_posted, period_for, post, register_posting_observer, rule_account
from .tables import accounts, budgets, journal_entries, journal_lines, periods, posting_rules, terms

__all__ = ["POSTING_OBSERVERS", "SUBLEDGERS", "Line", "PostingObserver", "SubledgerFn", "account_balances", "accounts",
           "budgets", "control_ties", "entry_posted", "journal_entries", "journal_lines", "period_for", "periods", "post",
           "posting_rules", "register_posting_observer", "register_subledger", "rule_account", "terms", "trial_balance"]
