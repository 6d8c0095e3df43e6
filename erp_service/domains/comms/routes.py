"""Comms' routes and response models."""
from __future__ import annotations

import re
from typing import Any, Literal

from fastapi import Depends, Path, Response
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel import pipeline
from ...kernel.listing import PageRequest, paginate
from .calls import call_view, place_call
from .escalations import escalate, escalation_view
from .mail import dispose, get_attachment, list_inbox, list_outbox, read_message, send_message
from .schemas import CallIn, DispositionIn, EscalationIn, OutboxIn
from .tables import calls, escalations


class AttachmentOut(BaseModel):
    n: int
    filename: str
    content_type: str
    size: int
    sha256: str


class DispositionOut(BaseModel):
    disposition: str
    ref: str | None = None
    note: str | None = None
    forwarded_to: str | None = None
    forward_id: str | None = None
    by_user: str
    on_date: str


class MessageOut(BaseModel):
    id: str
    direction: str
    box: str | None = None
    sender: str
    to: str | None = None
    cc: str | None = None
    subject: str
    received_on: str | None = None
    thread_id: str
    in_reply_to: str | None = None
    related_type: str | None = None
    related_id: str | None = None
    disposition: str | None = None
    disposition_ref: str | None = None
    status: str
    created_by: str | None = None
    created_on: str
    read: bool
    attachment_count: int


class MessageFull(MessageOut):
    body: str
    attachments: list[AttachmentOut]
    dispositions: list[DispositionOut]
    thread: list[str]


class EscalationOut(BaseModel):
    id: str
    status: str
    record_type: str
    record_id: str
    to_user: str
    reason: str
    note: str | None = None
    created_by: str | None = None
    created_on: str
    answered_on: str | None = None
    answered_by: str | None = None
    decision: str | None = None
    reply_id: str | None = None
    history: list[dict[str, Any]]


class CallOut(BaseModel):
    id: str
    party_type: str
    party_id: str
    number: str
    number_on_file: str | None = None
    number_source: Literal["on_file", "other"]
    purpose: str | None = None
    transcript: str
    created_by: str | None = None
    created_on: str


router = DomainRouter(tags=["communication"])


@router.get("/inbox", response_model=Envelope[Page[MessageOut]],
            summary="Inbound messages of your boxes (or one box); unread=true for unread only")
def get_inbox(box: str | None = None, unread: bool | None = None, page: PageRequest = Depends(page_params),
              api: Api = Depends(read_api)):
    return api.read(lambda tx: list_inbox(tx, page, box, unread))


@router.get("/inbox/{message_id}", response_model=Envelope[MessageFull],
            summary="Read one message (marks it read for you); needs its box")
def get_message(message_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: read_message(tx, message_id), object_type="message", object_id=message_id)


@router.get("/inbox/{message_id}/attachments/{n}", response_class=Response,
            responses={200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}},
                                         "application/octet-stream": {"schema": {"type": "string",
                                                                                 "format": "binary"}}},
                             "description": "The attachment's bytes."}},
            summary="Download attachment n (1-based) of a message")
def get_message_attachment(message_id: str, n: int = Path(..., ge=1, le=10_000), api: Api = Depends(read_api)):
    outcome = pipeline.read(api.db, api.actor, method="GET", path=api.path, query={}, object_type="message",
                            object_id=message_id, fn=lambda tx: get_attachment(tx, message_id, n))
    row = outcome.data
    safe = re.sub(r'[^A-Za-z0-9._\-]', "_", row["filename"])
    return Response(content=row["content"], media_type=row["content_type"],
                    headers={"Content-Disposition": f'attachment; filename="{safe}"',
                             "X-Business-Date": outcome.business_date})


@router.post("/inbox/{message_id}/disposition", operation_id="msg.dispose", status_code=201,
             response_model=Envelope[MessageFull],
             summary="Record what you did with a message (processed, duplicate, rejected, escalated, "
                     "suspicious, no_action, forwarded)")
def post_disposition(message_id: str, body: DispositionIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: dispose(tx, message_id, body), object_type="message", object_id=message_id)


@router.get("/outbox", response_model=Envelope[Page[MessageFull]], summary="Messages you sent")
def get_outbox(box: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: list_outbox(tx, page, box))


@router.post("/outbox", operation_id="msg.send", status_code=201, response_model=Envelope[MessageFull],
             summary="Send a message to staff (user id or email), a vendor or any address")
def post_outbox(body: OutboxIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: send_message(tx, body))


@router.get("/escalations", response_model=Envelope[Page[EscalationOut]], summary="List escalations")
def list_escalations(status: str | None = None, to_user: str | None = None, record_id: str | None = None,
                     reason: str | None = None, page: PageRequest = Depends(page_params),
                     api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(escalations).order_by(escalations.c.id), page,
                                        render=lambda r: escalation_view(tx, r), status=status,
                                        to_user=to_user, record_id=record_id, reason=reason))


@router.get("/escalations/{escalation_id}", response_model=Envelope[EscalationOut], summary="One escalation")
def get_escalation(escalation_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: escalation_view(tx, tx.get(escalations, escalation_id, "escalation")),
                    object_type="escalation", object_id=escalation_id)


@router.post("/escalations", operation_id="escalate", status_code=201, response_model=Envelope[EscalationOut],
             summary="Escalate a record to a person with a reason code")
def post_escalation(body: EscalationIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: escalate(tx, body))


@router.get("/calls", response_model=Envelope[Page[CallOut]], summary="Phone calls made")
def list_calls(party_type: str | None = None, party_id: str | None = None, number_source: str | None = None,
               page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(calls).order_by(calls.c.id), page, render=call_view,
                                        party_type=party_type, party_id=party_id, number_source=number_source))


@router.post("/calls", operation_id="call", status_code=201, response_model=Envelope[CallOut],
             summary="Call a vendor, customer or user (defaults to the number on file); returns the transcript")
def post_call(body: CallIn, api: Api = Depends(write_api)):
    world = getattr(api.request.app.state, "world", None)
    return api.write(lambda tx: place_call(tx, body, world))
