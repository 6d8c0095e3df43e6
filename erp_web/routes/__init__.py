"""The web UI's routes, one router per area (as the FastAPI project template's `api/routes/`):
signing in, the turn of human mode, records (home, lists, documents), the inbox, reports, the
handbook, and write actions. Each depends on `erp_web.deps` only for the app's state and the
signed-in person's ERP client. `ROUTERS` is the order `create_app` includes them in.
"""
from __future__ import annotations

from fastapi import APIRouter

from erp_web.routes import actions, handbook, inbox, records, reports, signin, turn

ROUTERS: list[APIRouter] = [signin.router, turn.router, records.router, inbox.router, reports.router, handbook.router,
                            actions.router]
