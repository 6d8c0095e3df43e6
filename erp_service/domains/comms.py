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
  such as ``release_hold`` or ``approve_invoice`` (see `ManagerAction`).

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
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Depends, Path, Response
from pydantic import BaseModel, Field, field_validator
from sqlalchemy import Column, Integer, LargeBinary, String, Table, Text, and_, exists, func, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..kernel import pipeline
from ..kernel.errors import forbidden, invalid, not_found, refused
from ..kernel.identity import Actor, load_actor, users
from ..kernel.listing import PageRequest, paginate
from ..kernel.schema import doc_columns, metadata
from ..kernel.tx import OBJECTS, Tx, register_object
from ..sim import SectionModel, WorldDate, world_section
from .roles import BOXES, readable_boxes

DispositionCode = Literal["processed", "duplicate", "rejected", "escalated", "suspicious", "no_action",
                          "forwarded"]
REASON_CODES = ("price_variance", "quantity_variance", "no_receipt", "duplicate", "fraud_suspected", "budget",
                "over_limit", "policy_exception", "credit", "lead_time", "master_data", "approval",
                "bank_change", "other")
ReasonCode = Literal["price_variance", "quantity_variance", "no_receipt", "duplicate", "fraud_suspected",
                     "budget", "over_limit", "policy_exception", "credit", "lead_time", "master_data",
                     "approval", "bank_change", "other"]
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
DEFAULT_MAIL_DOMAIN = "company.example"

# Tables ----------------------------------------------------------------------------------------

#: Inbound (direction ``in``, in a box) and outbound (``out``) messages. ``to``/``cc`` hold
#: comma-separated addresses (staff user ids or emails, vendor emails, anything else = external).
messages = Table(
    "messages", metadata,
    *doc_columns(),                                      # status: received | sent
    Column("direction", String, nullable=False),         # in | out
    Column("box", String),                               # inbox box; for out: the box it was sent from
    Column("sender", String, nullable=False),
    Column("to", Text),
    Column("cc", Text),
    Column("subject", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("received_on", String),
    Column("thread_id", String, nullable=False),
    Column("in_reply_to", String),
    Column("related_type", String),                      # a record the message is about, if known
    Column("related_id", String),
    Column("disposition", String),                       # the latest disposition code
    Column("disposition_ref", String),
)

message_reads = Table(
    "message_reads", metadata,
    Column("message_id", String, primary_key=True),
    Column("user_id", String, primary_key=True),
    Column("read_on", String, nullable=False),
)

message_attachments = Table(
    "message_attachments", metadata,
    Column("message_id", String, primary_key=True),
    Column("n", Integer, primary_key=True),              # 1-based
    Column("filename", String, nullable=False),
    Column("content_type", String, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String, nullable=False),
    Column("content", LargeBinary, nullable=False),
)

dispositions = Table(
    "dispositions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("message_id", String, nullable=False, index=True),
    Column("disposition", String, nullable=False),
    Column("ref", String),
    Column("note", Text),
    Column("forwarded_to", Text),
    Column("forward_id", String),                        # the outbound copy when forwarded
    Column("by_user", String, nullable=False),
    Column("on_date", String, nullable=False),
)

escalations = Table(
    "escalations", metadata,
    *doc_columns(),                                      # status: open | answered
    Column("record_type", String, nullable=False),
    Column("record_id", String, nullable=False),
    Column("to_user", String, nullable=False),
    Column("reason", String, nullable=False),
    Column("note", Text),
    Column("answered_on", String),
    Column("answered_by", String),
    Column("decision", Text),
    Column("reply_id", String),
)

calls = Table(
    "calls", metadata,
    *doc_columns(),                                      # status: completed
    Column("party_type", String, nullable=False),        # vendor | customer | user
    Column("party_id", String, nullable=False),
    Column("number", String, nullable=False),            # as dialled
    Column("number_on_file", String),
    Column("number_source", String, nullable=False),     # on_file | other
    Column("purpose", Text),
    Column("transcript", Text, nullable=False),
)

# Attachments are not part of the message image: bytes do not belong in the audit log.
register_object("message", messages)
register_object("disposition", dispositions)
register_object("escalation", escalations)
register_object("call", calls)


# PDF ------------------------------------------------------------------------------------------

_PAGE_W, _PAGE_H, _MARGIN, _LEADING = 612, 792, 54, 13
_LINES_PER_PAGE = (_PAGE_H - 2 * _MARGIN - 30) // _LEADING
_WRAP = 96


def _pdf_escape(text: str) -> str:
    # Helvetica's WinAnsi covers latin-1; anything else becomes "?" so output stays ASCII-safe.
    text = text.encode("latin-1", errors="replace").decode("latin-1")
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _wrap(line: str) -> list[str]:
    line = line.replace("\t", "    ").rstrip()
    out = []
    while len(line) > _WRAP:
        cut = line.rfind(" ", 0, _WRAP)
        cut = cut if cut > 0 else _WRAP
        out.append(line[:cut])
        line = "  " + line[cut:].lstrip()
    out.append(line)
    return out


def make_pdf(title: str, lines: list[str]) -> bytes:
    """A small PDF 1.4 document: `title` in bold, then `lines` (wrapped, paginated).

    Deterministic: no dates, no random ids, uncompressed streams — the same inputs always
    give byte-identical output."""
    body = [l2 for line in lines for l2 in _wrap(str(line))]
    pages: list[list[str]] = []
    first = _LINES_PER_PAGE - 2
    pages.append(body[:first])
    rest = body[first:]
    while rest:
        pages.append(rest[:_LINES_PER_PAGE])
        rest = rest[_LINES_PER_PAGE:]

    objects: list[bytes] = []      # object n is objects[n-1]

    def add(content: bytes) -> int:
        objects.append(content)
        return len(objects)

    catalog = add(b"")             # filled in once the page tree number is known
    page_tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    bold = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    kids = []
    for i, page_lines in enumerate(pages):
        ops = ["BT"]
        y = _PAGE_H - _MARGIN
        if i == 0:
            ops.append(f"/F2 14 Tf 1 0 0 1 {_MARGIN} {y} Tm ({_pdf_escape(title)}) Tj")
            y -= 2 * _LEADING
        ops.append(f"/F1 10 Tf {_LEADING} TL 1 0 0 1 {_MARGIN} {y} Tm")
        for line in page_lines:
            ops.append(f"({_pdf_escape(line)}) Tj T*")
        ops.append(f"/F1 8 Tf 1 0 0 1 {_MARGIN} {_MARGIN - 20} Tm (Page {i + 1} of {len(pages)}) Tj")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R "
            b"/F2 %d 0 R >> >> /Contents %d 0 R >>" % (page_tree, _PAGE_W, _PAGE_H, font, bold, content)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % page_tree
    objects[page_tree - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                              + b"] /Count %d >>" % len(kids))
    info = add(b"<< /Title (" + _pdf_escape(title).encode("latin-1") + b") /Producer (bb-erp) >>")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += (b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
            % (len(objects) + 1, catalog, info, xref))
    return bytes(out)


_TJ = re.compile(rb"\(((?:\\.|[^\\)])*)\) Tj")


def pdf_text(data: bytes) -> list[str]:
    """The text lines of a PDF written by `make_pdf` (title first, page footers included)."""
    out = []
    for m in _TJ.finditer(data):
        raw = re.sub(rb"\\(.)", rb"\1", m.group(1))
        out.append(raw.decode("latin-1"))
    return out


# Addresses and boxes ---------------------------------------------------------------------------

def mail_domain(conn) -> str:
    """The company's mail domain (company setting ``mail_domain``)."""
    from .org import company
    row = conn.execute(select(company.c.value).where(company.c.key == "mail_domain")).first()
    return row[0] if row else DEFAULT_MAIL_DOMAIN


def box_address(conn, box: str) -> str:
    """The email address of a box, e.g. ``ap@northgate.example``."""
    return f"{box}@{mail_domain(conn)}"


def require_box(actor: Actor, box: str | None) -> None:
    """403 unless the actor may read `box`."""
    if box is None or not actor.can(f"box.{box}"):
        raise forbidden(f"Your role does not give you the {box} box.", permission=f"box.{box}")


def _check_box(box: str) -> str:
    if box not in BOXES:
        raise invalid(f"Unknown box {box!r}; boxes are {', '.join(BOXES)}.")
    return box


_ADDR = re.compile(r"^[^\s,;<>]+@[^\s,;<>]+\.[^\s,;<>]+$|^[A-Za-z0-9][A-Za-z0-9._\-]*$")


def _addresses(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else re.split(r"[,;]", value)
    out = []
    for item in items:
        a = str(item).strip()
        if not a:
            continue
        m = re.search(r"<([^>]+)>", a)
        bare = m.group(1).strip() if m else a
        if not _ADDR.match(bare):
            raise invalid(f"{a!r} is not an email address or user id.")
        out.append(a)
    return out


# Service functions -----------------------------------------------------------------------------

def deliver(tx: Tx, box: str, sender: str, subject: str, body: str,
            attachments: list[tuple[str, bytes]] | None = None, *, to: str | None = None,
            received_on: str | None = None, thread: str | None = None, in_reply_to: str | None = None,
            related_type: str | None = None, related_id: str | None = None) -> dict[str, Any]:
    """Put an inbound message (with attachments) into `box`; returns the message row.

    For counterparties and generators: the caller's pipeline write carries the permission
    (``msg.deliver``) and the audit row."""
    _check_box(box)
    msg = tx.create_doc("message", messages, "MSG", "received", direction="in", box=box, sender=sender,
                        to=to or box_address(tx.conn, box), cc=None, subject=subject, body=body,
                        received_on=received_on or tx.business_date, thread_id="", in_reply_to=in_reply_to,
                        related_type=related_type, related_id=related_id)
    thread_id = _thread_of(tx, in_reply_to) if thread is None and in_reply_to else (thread or msg["id"])
    tx.update(messages, msg["id"], thread_id=thread_id)
    _attach(tx, msg["id"], attachments or [])
    return {**msg, "thread_id": thread_id}


def _thread_of(tx: Tx, message_id: str) -> str:
    row = tx.find(messages, id=message_id)
    return row["thread_id"] if row else message_id


def _attach(tx: Tx, message_id: str, attachments: list[tuple[str, bytes]]) -> None:
    for n, (filename, content) in enumerate(attachments, start=1):
        if not isinstance(content, (bytes, bytearray)):
            raise TypeError(f"attachment {filename!r} must be bytes")
        ctype = "application/pdf" if filename.lower().endswith(".pdf") else "application/octet-stream"
        tx.insert(message_attachments, message_id=message_id, n=n, filename=filename, content_type=ctype,
                  size=len(content), sha256=hashlib.sha256(content).hexdigest(), content=bytes(content))


def _attachment_list(tx: Tx, message_id: str) -> list[dict[str, Any]]:
    return tx.all(select(message_attachments.c.n, message_attachments.c.filename,
                         message_attachments.c.content_type, message_attachments.c.size,
                         message_attachments.c.sha256)
                  .where(message_attachments.c.message_id == message_id).order_by(message_attachments.c.n))


def _sender_address(tx: Tx, box: str | None) -> str:
    if box:
        return box_address(tx.conn, box)
    row = tx.find(users, id=tx.actor.user_id)
    return (row or {}).get("email") or tx.actor.user_id


def message_view(tx: Tx, row: dict[str, Any], *, full: bool) -> dict[str, Any]:
    """A message as the API shows it; `full` adds body, attachments, dispositions and thread."""
    read = tx.one(select(message_reads.c.read_on).where(message_reads.c.message_id == row["id"],
                                                        message_reads.c.user_id == tx.actor.user_id))
    out = _brief_view(row, read is not None, tx.count(message_attachments, message_id=row["id"]))
    if full:
        out["body"] = row["body"]
        out["attachments"] = _attachment_list(tx, row["id"])
        out["dispositions"] = [{k: d[k] for k in ("disposition", "ref", "note", "forwarded_to", "forward_id",
                                                  "by_user", "on_date")}
                               for d in tx.rows(dispositions, message_id=row["id"])]
        out["thread"] = [r["id"] for r in tx.all(select(messages.c.id).where(
            messages.c.thread_id == row["thread_id"]).order_by(messages.c.id))]
    return out


def _brief_view(row: dict[str, Any], read: bool, attachment_count: int) -> dict[str, Any]:
    out = {k: row[k] for k in ("id", "direction", "box", "sender", "to", "cc", "subject", "received_on",
                               "thread_id", "in_reply_to", "related_type", "related_id", "disposition",
                               "disposition_ref", "status", "created_by", "created_on")}
    out["read"] = read
    out["attachment_count"] = attachment_count
    return out


def message_views(tx: Tx, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`message_view(full=False)` of a whole page: read marks and attachment counts in two
    queries instead of two per message."""
    ids = [r["id"] for r in rows]
    if not ids:
        return []
    read = {m for (m,) in tx.conn.execute(select(message_reads.c.message_id).where(
        message_reads.c.message_id.in_(ids), message_reads.c.user_id == tx.actor.user_id))}
    counts = dict(tx.conn.execute(select(message_attachments.c.message_id, func.count())
                                  .where(message_attachments.c.message_id.in_(ids))
                                  .group_by(message_attachments.c.message_id)).all())
    return [_brief_view(r, r["id"] in read, int(counts.get(r["id"], 0))) for r in rows]


def list_inbox(tx: Tx, page: PageRequest, box: str | None, unread: bool | None) -> dict[str, Any]:
    """Inbound messages of the boxes the actor may read (or of one box, 403 if not theirs)."""
    if box is not None:
        _check_box(box)
        require_box(tx.actor, box)
        boxes = [box]
    else:
        boxes = readable_boxes(tx.actor)
    stmt = select(messages).where(messages.c.direction == "in", messages.c.box.in_(boxes))
    read_by_me = exists().where(and_(message_reads.c.message_id == messages.c.id,
                                     message_reads.c.user_id == tx.actor.user_id))
    if unread is True:
        stmt = stmt.where(~read_by_me)
    elif unread is False:
        stmt = stmt.where(read_by_me)
    out = paginate(tx, stmt.order_by(messages.c.id), page)
    out["items"] = message_views(tx, out["items"])   # the page at once, not two queries per message
    return out


def _inbound(tx: Tx, message_id: str) -> dict[str, Any]:
    row = tx.find(messages, id=message_id)
    if row is None or row["direction"] != "in":
        raise not_found("inbox message", message_id)
    require_box(tx.actor, row["box"])
    return row


def read_message(tx: Tx, message_id: str) -> dict[str, Any]:
    """One inbound message in full; marks it read for the actor."""
    row = _inbound(tx, message_id)
    if tx.find(message_reads, message_id=message_id, user_id=tx.actor.user_id) is None:
        tx.insert(message_reads, message_id=message_id, user_id=tx.actor.user_id, read_on=tx.business_date)
    return message_view(tx, row, full=True)


def get_attachment(tx: Tx, message_id: str, n: int) -> dict[str, Any]:
    """Attachment `n` (1-based) of an inbound message, with its bytes."""
    _inbound(tx, message_id)
    row = tx.find(message_attachments, message_id=message_id, n=n)
    if row is None:
        raise not_found(f"attachment of {message_id}", n)
    return row


def dispose(tx: Tx, message_id: str, body: DispositionIn) -> dict[str, Any]:
    """Record what was done with an inbound message; ``forwarded`` also sends a copy to `to`."""
    row = _inbound(tx, message_id)
    tx.touch("message", message_id)
    forward_id = None
    to = _addresses(body.to)
    if body.disposition == "forwarded":
        if not to:
            raise invalid("A forwarded disposition needs `to`: the address(es) it was forwarded to.")
        fwd_body = ((body.note + "\n\n") if body.note else "") + (
            f"---------- Forwarded message ----------\nFrom: {row['sender']}\nSubject: {row['subject']}\n"
            f"Date: {row['received_on']}\n\n{row['body']}")
        fwd = _send(tx, to=to, cc=[], subject=f"Fwd: {row['subject']}", text=fwd_body, box=row["box"],
                    in_reply_to=message_id, related_type=row["related_type"], related_id=row["related_id"])
        atts = tx.rows(message_attachments, message_id=message_id)
        _attach(tx, fwd["id"], [(a["filename"], a["content"]) for a in atts])
        forward_id = fwd["id"]
    elif to:
        raise invalid("`to` is only for the forwarded disposition.")
    d = tx.insert(dispositions, message_id=message_id, disposition=body.disposition, ref=body.ref, note=body.note,
                  forwarded_to=", ".join(to) or None, forward_id=forward_id, by_user=tx.actor.user_id,
                  on_date=tx.business_date)
    tx.created("disposition", d["id"])
    tx.update(messages, message_id, disposition=body.disposition, disposition_ref=body.ref)
    if tx.find(message_reads, message_id=message_id, user_id=tx.actor.user_id) is None:
        tx.insert(message_reads, message_id=message_id, user_id=tx.actor.user_id, read_on=tx.business_date)
    return message_view(tx, tx.get(messages, message_id), full=True)


def _send(tx: Tx, *, to: list[str], cc: list[str], subject: str, text: str, box: str | None,
          in_reply_to: str | None, related_type: str | None, related_id: str | None) -> dict[str, Any]:
    msg = tx.create_doc("message", messages, "MSG", "sent", direction="out", box=box,
                        sender=_sender_address(tx, box), to=", ".join(to), cc=", ".join(cc) or None,
                        subject=subject, body=text, received_on=tx.business_date, thread_id="",
                        in_reply_to=in_reply_to, related_type=related_type, related_id=related_id)
    thread_id = _thread_of(tx, in_reply_to) if in_reply_to else msg["id"]
    tx.update(messages, msg["id"], thread_id=thread_id)
    return {**msg, "thread_id": thread_id}


def send_message(tx: Tx, body: OutboxIn) -> dict[str, Any]:
    """Send a message (stored in the outbox; no counterparty reads free text)."""
    to, cc = _addresses(body.to), _addresses(body.cc)
    if not to:
        raise invalid("`to` needs at least one address.")
    if body.box is not None:
        _check_box(body.box)
        require_box(tx.actor, body.box)
    if body.in_reply_to is not None and tx.find(messages, id=body.in_reply_to) is None:
        raise not_found("message", body.in_reply_to)
    msg = _send(tx, to=to, cc=cc, subject=body.subject, text=body.body, box=body.box,
                in_reply_to=body.in_reply_to, related_type=body.related_type, related_id=body.related_id)
    return message_view(tx, tx.get(messages, msg["id"]), full=True)


def list_outbox(tx: Tx, page: PageRequest, box: str | None) -> dict[str, Any]:
    """Messages the actor sent (everyone's with ``audit.read``)."""
    stmt = select(messages).where(messages.c.direction == "out")
    if not tx.actor.can("audit.read"):
        stmt = stmt.where(messages.c.created_by == tx.actor.user_id)
    return paginate(tx, stmt.order_by(messages.c.id), page, render=lambda r: message_view(tx, r, full=True),
                    box=box)


# Escalations

def _record_exists(tx: Tx, record_type: str, record_id: str) -> bool | None:
    ot = OBJECTS.get(record_type)
    if ot is None:
        return None
    pk = list(ot.table.primary_key.columns)[0]
    return tx.one(select(pk).where(pk == record_id)) is not None


def escalate(tx: Tx, body: EscalationIn) -> dict[str, Any]:
    """Escalate a record to a named person with a reason code."""
    known = _record_exists(tx, body.record_type, body.record_id)
    if known is None:
        raise invalid(f"Unknown record_type {body.record_type!r}; known types: {', '.join(sorted(OBJECTS))}.")
    if not known:
        raise not_found(body.record_type, body.record_id)
    target = tx.find(users, id=body.to)
    if target is None or target["kind"] != "staff" or not target["active"]:
        raise invalid(f"{body.to!r} is not an active staff user; escalate to a person by user id.")
    if body.to == tx.actor.user_id:
        raise invalid("You cannot escalate to yourself.")
    row = tx.create_doc("escalation", escalations, "ESC", "open", record_type=body.record_type,
                        record_id=body.record_id, to_user=body.to, reason=body.reason, note=body.note)
    return escalation_view(tx, tx.get(escalations, row["id"]))


def escalation_view(tx: Tx, row: dict[str, Any]) -> dict[str, Any]:
    """An escalation with its history."""
    out = {k: row[k] for k in ("id", "status", "record_type", "record_id", "to_user", "reason", "note",
                               "created_by", "created_on", "answered_on", "answered_by", "decision", "reply_id")}
    out["history"] = tx.history("escalation", row["id"])
    return out


# Calls

def _digits10(number: str | None) -> str:
    return re.sub(r"\D", "", number or "")[-10:]


def party_phone(tx: Tx, party_type: str, party_id: str) -> str | None:
    """The phone number on file for a vendor, customer or user (404 if the party does not exist)."""
    table = {"vendor": "vendors", "customer": "customers", "user": "users"}[party_type]
    t = metadata.tables.get(table)
    if t is None:
        raise not_found(party_type, party_id)
    row = tx.find(t, id=party_id)
    if row is None:
        raise not_found(party_type, party_id)
    return row.get("phone")


def scripted_transcript(world: Any, party_type: str, party_id: str, dialled: str, on_file: str | None,
                        today: str) -> str:
    """The world's transcript for this party and dialled number on `today`, else rang out."""
    section = world.section("calls", []) if world is not None else []
    best: tuple[str, int] | None = None
    text = RANG_OUT
    for i, entry in enumerate(section or []):
        if str(entry.get("party_id")) != party_id:
            continue
        if entry.get("party_type") not in (None, party_type):
            continue
        number = entry.get("number", "on_file")
        target = on_file if number == "on_file" else number
        if not target or _digits10(target) != _digits10(dialled):
            continue
        start = entry.get("from") or ""
        if start > today:
            continue
        if best is None or (start, i) >= best:
            best, text = (start, i), str(entry.get("transcript", RANG_OUT))
    return text


def place_call(tx: Tx, body: CallIn, world: Any) -> dict[str, Any]:
    """Call a party; records the number dialled and whether it is the one on file."""
    on_file = party_phone(tx, body.party_type, body.party_id)
    number = body.number or on_file
    if not number:
        raise invalid(f"No phone number is on file for {body.party_type} {body.party_id}; give `number`.")
    if len(re.sub(r"\D", "", number)) < 7:
        raise invalid(f"{number!r} is not a phone number.")
    source = "on_file" if on_file and _digits10(number) == _digits10(on_file) else "other"
    transcript = scripted_transcript(world, body.party_type, body.party_id, number, on_file, tx.business_date)
    row = tx.create_doc("call", calls, "CALL", "completed", party_type=body.party_type, party_id=body.party_id,
                        number=number, number_on_file=on_file, number_source=source, purpose=body.purpose,
                        transcript=transcript)
    return call_view(tx.get(calls, row["id"]))


def call_view(row: dict[str, Any]) -> dict[str, Any]:
    """A call as the API shows it."""
    return {k: row[k] for k in ("id", "party_type", "party_id", "number", "number_on_file", "number_source",
                               "purpose", "transcript", "created_by", "created_on")}


# The manager actor ------------------------------------------------------------------------------

#: handler(day, user_id, escalation_row, action_spec) -> None; acts through `day.act`.
ManagerAction = Callable[[Any, str, dict, dict], None]
ESCALATION_ACTIONS: dict[str, ManagerAction] = {}


def register_escalation_action(kind: str, handler: ManagerAction) -> None:
    """Teach the manager actor an action kind (e.g. payables registers ``release_hold``).

    The handler runs as the escalation's addressee and must act only through
    ``day.act(user_id, action_code, path, body, fn)`` so the action is audited like any other."""
    ESCALATION_ACTIONS[kind] = handler


def _rules(world: Any) -> list[dict]:
    section = world.section("escalations", [])
    if isinstance(section, dict):
        section = section.get("rules", [])
    return list(section or [])


def matching_rule(rules: list[dict], esc: dict[str, Any]) -> dict | None:
    """The first rule that matches the escalation's record, reason and addressee."""
    for rule in rules:
        if rule.get("record_id", "*") not in ("*", esc["record_id"]):
            continue
        if rule.get("record_type") not in (None, "*", esc["record_type"]):
            continue
        if rule.get("reason") not in ("*", esc["reason"]):   # the reason code must match
            continue
        if rule.get("to") not in (None, esc["to_user"]):
            continue
        return rule
    return None


def _reply_box(conn, user_id: str) -> str:
    actor = load_actor(conn, user_id)
    boxes = readable_boxes(actor) if actor else []
    return boxes[0] if boxes else "general"


def _answer(esc: dict[str, Any], rule: dict, manager: str) -> Callable[[Tx], Any]:
    def fn(tx: Tx) -> dict[str, Any]:
        current = tx.get(escalations, esc["id"], "escalation")
        if current["status"] != "open":
            raise refused("bad_status", f"escalation {esc['id']} is {current['status']}.")
        reply_id = None
        for spec in rule.get("actions", []):
            if spec.get("kind") != "reply":
                continue
            me = tx.find(users, id=manager) or {}
            box = spec.get("box") or _reply_box(tx.conn, esc["created_by"])
            msg = deliver(tx, box, me.get("email") or manager,
                          spec.get("subject") or f"Re: {esc['record_type']} {esc['record_id']} ({esc['reason']})",
                          spec.get("body") or rule.get("decision") or "", to=esc["created_by"],
                          related_type=esc["record_type"], related_id=esc["record_id"])
            reply_id = reply_id or msg["id"]
        tx.set_status("escalation", escalations, esc["id"], "answered", rule.get("decision") or "answered",
                      allowed_from=["open"], answered_on=tx.business_date, answered_by=manager,
                      decision=rule.get("decision"), reply_id=reply_id)
        return {"id": esc["id"], "reply_id": reply_id}
    return fn


def _managers(day) -> None:
    """Answer open escalations from before today by the world's rules, in id order (an
    addressee on leave answers when back)."""
    from .org import on_leave
    rules = _rules(day.world)
    if not rules:
        return
    open_rows = day.look(lambda tx: tx.all(select(escalations).where(
        escalations.c.status == "open", escalations.c.created_on < day.date).order_by(escalations.c.id)))
    for esc in open_rows:
        rule = matching_rule(rules, esc)
        if rule is None:
            continue
        manager = esc["to_user"]
        if day.look(lambda tx, m=manager: on_leave(tx, m, day.date)):
            continue   # the addressee answers when back from leave
        for spec in rule.get("actions", []):
            kind = spec.get("kind")
            if kind in ("reply", "keep_hold", "none", None):
                continue
            handler = ESCALATION_ACTIONS.get(kind)
            if handler is None:
                raise RuntimeError(f"world escalation rule uses unknown action {kind!r}; "
                                   f"known: {', '.join(sorted(ESCALATION_ACTIONS)) or 'reply, keep_hold, none'}")
            handler(day, manager, esc, spec)
        day.act(manager, "escalation.answer", f"/escalations/{esc['id']}/answer",
                {"decision": rule.get("decision")}, _answer(esc, rule, manager), permission="escalate")


def _register_actor() -> None:
    from ..sim import actor
    actor("managers")(_managers)


_register_actor()


# Router ------------------------------------------------------------------------------------------

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


class DispositionIn(In):
    disposition: DispositionCode
    ref: str | None = Field(None, max_length=200, description="The record this message became or duplicates.")
    note: str | None = Field(None, max_length=20_000)
    to: str | list[str] | None = Field(None, description="For `forwarded`: where it was forwarded.")


class OutboxIn(In):
    to: str | list[str] = Field(..., description="Staff user ids or email addresses (comma-separated or a list).")
    cc: str | list[str] | None = None
    subject: str = Field(..., min_length=1, max_length=500)
    body: str = Field(..., max_length=50_000)
    box: str | None = Field(None, description="Send from a box address you hold (e.g. ap).")
    in_reply_to: str | None = Field(None, description="Message id this replies to (joins its thread).")
    related_type: str | None = None
    related_id: str | None = None


class EscalationIn(In):
    record_type: str = Field(..., min_length=1, description="Object type, e.g. ap_invoice, vendor_bank_account.")
    record_id: str = Field(..., min_length=1)
    to: str = Field(..., min_length=1, description="User id of the person escalated to.")
    reason: ReasonCode
    note: str | None = Field(None, max_length=20_000)


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


class CallIn(In):
    party_type: Literal["vendor", "customer", "user"]
    party_id: str = Field(..., min_length=1)
    number: str | None = Field(None, max_length=40, description="Number to dial; defaults to the one on file.")
    purpose: str | None = Field(None, max_length=2000)

    @field_validator("number")
    @classmethod
    def _strip(cls, v: str | None) -> str | None:
        return v.strip() if v is not None and v.strip() else None


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


router = APIRouter(tags=["communication"])


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
