"""The audit event's response model and `GET /audit`."""
from __future__ import annotations

from typing import Any

from fastapi import Depends, Query
from pydantic import BaseModel

from ...http.api import Api, Envelope, Page, page_params, read_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest
from .service import list_audit


class AuditEventOut(BaseModel):
    id: int
    business_date: str
    wall_time: str
    channel: str
    actor: str | None = None
    token_id: str | None = None
    method: str
    path: str
    action: str
    object_type: str | None = None
    object_id: str | None = None
    outcome: str
    status: int
    error_code: str | None = None
    idem_key: str | None = None
    replay: bool
    before: Any = None
    after: Any = None
    request: Any = None


router = DomainRouter(tags=["audit"])


@router.get("/audit", response_model=Envelope[Page[AuditEventOut]],
            summary="Audit events (yours; everyone's with audit.read), oldest first")
def get_audit(actor: str | None = None, action: str | None = None, object_id: str | None = None,
              object_type: str | None = None, outcome: str | None = None,
              since_id: int | None = Query(None, ge=0, le=2**62, description="Only events with a larger id."),
              page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: list_audit(tx, page, actor=actor, action=action, object_id=object_id,
                                          object_type=object_type, outcome=outcome, since_id=since_id))
