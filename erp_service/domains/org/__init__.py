"""Organisation: departments, approval limits, delegations, leave, the company calendar and its
settings, and the read routes about people (`/whoami`, `/users`, `/departments`, `/calendar`).

`tables` holds the tables, `service` the answers other domains ask (is a day a workday, is a
user on leave, who is their delegate, what is their approval limit) and the user views, `routes`
the response models and the router. The calendar's workdays are registered with `sim` (the
clock's actors follow them).
"""
from __future__ import annotations

from .routes import router
from .service import approval_limit_cents, delegate_of, is_workday, on_leave, user_view, whoami
from .tables import approval_limits, calendar, company, delegations, departments, leave

__all__ = ["router", "approval_limit_cents", "approval_limits", "calendar", "company", "delegate_of",
           "delegations", "departments", "is_workday", "leave", "on_leave", "user_view", "whoami"]
