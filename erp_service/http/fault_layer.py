"""The ASGI layer that applies a fault plan to the agent API, outside every transaction.

It is installed only when faults are declared, so a clean attempt pays nothing per request.
Both failure kinds answer with the same bytes; the record of each fault goes to an in-memory
log the host reads through the control API — never the database, never the agent's side.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from typing import Any

from sqlalchemy import func, select

from ..faults import FaultPlan
from ..kernel.db import Database
from ..kernel.schema import audit_events
from .limits import MAX_BODY_BYTES

UNAVAILABLE_BODY = json.dumps({
    "type": "https://bb-erp.dev/errors/service_unavailable", "title": "service_unavailable",
    "status": 503, "code": "service_unavailable",
    "detail": "The service is temporarily unavailable; try again.",
}, separators=(",", ":")).encode()
UNAVAILABLE_HEADERS = [(b"content-type", b"application/problem+json"),
                       (b"content-length", str(len(UNAVAILABLE_BODY)).encode()),
                       (b"retry-after", b"1")]


class FaultLog:
    """Thread-safe, append-only list of fault records, read by the control API."""

    def __init__(self) -> None:
        self._records: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        with self._lock:
            record["seq"] = len(self._records) + 1
            self._records.append(record)

    def after(self, seq: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._records[seq:]]


class FaultLayer:
    """ASGI middleware: decide per request, then fail before, lose the response, or delay it.
    The fault's record is appended, complete, before the client is sent anything."""

    def __init__(self, app, plan: FaultPlan, db: Database, log: FaultLog) -> None:
        self.app = app
        self.plan = plan
        self.db = db
        self.log = log
        self._decide_lock = asyncio.Lock()

    def _last_audit_id(self) -> int:
        with self.db.transaction() as conn:
            return int(conn.execute(select(func.max(audit_events.c.id))).scalar() or 0)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks = []
        size = 0
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if more and size > MAX_BODY_BYTES:
                # Too big for the ERP to take: no fault is decided (it counts as no request),
                # and the limits layer inside answers it without this layer holding it all.
                await self.app(scope, _chained(chunks, receive), send)
                return
        body = b"".join(chunks)
        replayed = False

        async def replay_receive():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async with self._decide_lock:  # arrival order decides which request is the n-th
            hit = self.plan.decide(scope["method"], scope["path"])
        if hit is None:
            await self.app(scope, replay_receive, send)
            return

        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        loop = asyncio.get_running_loop()
        before = await loop.run_in_executor(None, self._last_audit_id)
        record: dict[str, Any] = {
            "kind": hit.kind, "rule": hit.rule, "method": scope["method"], "path": scope["path"],
            "body_sha256": _body_hash(body), "idem_key": headers.get("idempotency-key"),
            "audit_before": before, "delay_s": hit.delay_s,
        }
        # The record is complete and in the log before the client hears anything: a host that
        # reads /control/faults as soon as the agent gets its answer must find it (and the
        # streamer reads each seq once, so a record is never made visible half-filled).
        captured: list[dict] = []
        served_status = None
        if hit.kind != "fail_before":

            async def capture(message):
                captured.append(message)

            await self.app(scope, replay_receive, capture)
            served_status = next((m["status"] for m in captured if m["type"] == "http.response.start"), None)
        after = await loop.run_in_executor(None, self._last_audit_id)
        record.update({
            "served_status": served_status, "client_status": served_status if hit.kind == "slow" else 503,
            "committed": served_status is not None and served_status < 300 and scope["method"] != "GET",
            "audit_after": after, "business_date": await loop.run_in_executor(None, self.db.business_date),
        })
        self.log.append(record)
        if hit.kind == "slow":
            await asyncio.sleep(hit.delay_s)
            for message in captured:
                await send(message)
        else:   # fail_before and lost_response: the same bytes, so the agent cannot tell them apart
            await _send_unavailable(send)


def _chained(chunks: list[bytes], receive):
    """A receive that gives back what was already read (as one message), then the rest."""
    pending = [b"".join(chunks)]

    async def chained():
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": True}
        return await receive()
    return chained


def _body_hash(body: bytes) -> str:
    try:
        canon = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode() if body else b""
    except (ValueError, RecursionError):   # not JSON, or nested past the parser's limit
        canon = body
    return hashlib.sha256(canon).hexdigest()


async def _send_unavailable(send) -> None:
    await send({"type": "http.response.start", "status": 503, "headers": UNAVAILABLE_HEADERS})
    await send({"type": "http.response.body", "body": UNAVAILABLE_BODY})
