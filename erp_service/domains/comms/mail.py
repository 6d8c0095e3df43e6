"""Mail: box addresses, delivering into a box, reading, dispositions, sending, the outbox."""
from __future__ import annotations

import hashlib
import re
from typing import Any

from sqlalchemy import and_, bindparam, exists, func, select

from ...kernel.errors import forbidden, invalid, not_found
from ...kernel.identity import Actor, users
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from ..org import company
from ..roles import BOXES, readable_boxes
from .schemas import DispositionIn, OutboxIn
from .tables import DEFAULT_MAIL_DOMAIN, dispositions, message_attachments, message_reads, messages


def mail_domain(conn) -> str:
    """The company's mail domain (company setting ``mail_domain``)."""
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


# A message's view reads five things about it (the attachment count through `Tx.count`); the
# other statements are built once with bound parameters and run on the driver
# (`Tx.one`/`Tx.all` with params): built per call, their expressions and
# cache keys were most of a sent message's time, and `GET /outbox` paid them for every row.
_READ_MARK = select(message_reads.c.read_on).where(message_reads.c.message_id == bindparam("message_id"),
                                                   message_reads.c.user_id == bindparam("user_id"))
_ATTACHMENTS = (select(message_attachments.c.n, message_attachments.c.filename, message_attachments.c.content_type,
                       message_attachments.c.size, message_attachments.c.sha256)
                .where(message_attachments.c.message_id == bindparam("message_id"))
                .order_by(message_attachments.c.n))
_DISPOSITION_KEYS = ("disposition", "ref", "note", "forwarded_to", "forward_id", "by_user", "on_date")
_DISPOSITIONS = (select(*(dispositions.c[k] for k in _DISPOSITION_KEYS))
                 .where(dispositions.c.message_id == bindparam("message_id")).order_by(dispositions.c.id))
_THREAD = select(messages.c.id).where(messages.c.thread_id == bindparam("thread_id")).order_by(messages.c.id)


def _attachment_list(tx: Tx, message_id: str) -> list[dict[str, Any]]:
    return tx.all(_ATTACHMENTS, {"message_id": message_id})


def _sender_address(tx: Tx, box: str | None) -> str:
    if box:
        return box_address(tx.conn, box)
    row = tx.find(users, id=tx.actor.user_id)
    return (row or {}).get("email") or tx.actor.user_id


def message_view(tx: Tx, row: dict[str, Any], *, full: bool) -> dict[str, Any]:
    """A message as the API shows it; `full` adds body, attachments, dispositions and thread."""
    key = {"message_id": row["id"]}
    read = tx.one(_READ_MARK, {**key, "user_id": tx.actor.user_id})
    out = _brief_view(row, read is not None, tx.count(message_attachments, message_id=row["id"]))
    if full:
        out["body"] = row["body"]
        out["attachments"] = _attachment_list(tx, row["id"])
        out["dispositions"] = tx.all(_DISPOSITIONS, key)
        out["thread"] = [r["id"] for r in tx.all(_THREAD, {"thread_id": row["thread_id"]})]
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
    counts: dict[str, int] = dict(tx.conn.execute(select(message_attachments.c.message_id, func.count())
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
