"""`GET /audit`: the audit log as the agent may see it — its own events, or everyone's with
``audit.read``. Events of the ``setup`` channel (scenario building) are never shown.

`service` reads the events (the kernel's `audit_events`: no tables of its own), `routes` serves
them.
"""
from __future__ import annotations

from .routes import router
from .service import event_view, list_audit

__all__ = ["router", "event_view", "list_audit"]
