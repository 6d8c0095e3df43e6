"""The one path every request takes: permission, idempotency, transaction, audit.

The agent API, the counterparties (`sim/`) and the scenario generators all call `write` and
`read` here, so every change anywhere is permission-checked and audited the same way.

One request = one transaction: the service function runs in a savepoint; a refusal rolls the
savepoint back and the audit row of the refusal is still committed. Any other exception rolls
back everything; its audit row is written in a fresh transaction and a 500 problem is raised.
"""
from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from .clock import get_business_date, wall_now
from .db import Database
from .errors import Problem
from .identity import Actor
from .jsonutil import canonical_json, sha256_text
from .schema import audit_events, idempotency
from .tx import Tx

REQUEST_TEXT_LIMIT = 20_000


@dataclass(frozen=True)
class RequestOutcome:
    """What a write or read produced: the data, the HTTP status, and whether it was a replay."""

    status: int
    data: Any
    business_date: str
    replay: bool = False
    audit_id: int | None = None


def fingerprint(method: str, path: str, body: Any) -> str:
    """Identity of a write for idempotency: method, path and canonical body."""
    return sha256_text(f"{method} {path} {canonical_json(body)}")


def _request_text(value: Any) -> str | None:
    if value is None:
        return None
    text = canonical_json(value)
    return text if len(text) <= REQUEST_TEXT_LIMIT else text[:REQUEST_TEXT_LIMIT] + "…"


def _audit(conn, actor: Actor | None, *, business_date: str, method: str, path: str, action: str,
           outcome: str, status: int, error_code: str | None = None, object_type: str | None = None,
           object_id: str | None = None, before: Any = None, after: Any = None,
           idem_key: str | None = None, replay: bool = False, request: Any = None,
           channel: str | None = None) -> int:
    result = conn.execute(_AUDIT_INSERT, dict(
        business_date=business_date, wall_time=wall_now(),
        channel=channel or (actor.channel if actor else "api"),
        actor=actor.user_id if actor else None, token_id=actor.token_id if actor else None,
        method=method, path=path, action=action, object_type=object_type, object_id=object_id,
        before=canonical_json(before) if before is not None else None,
        after=canonical_json(after) if after is not None else None,
        outcome=outcome, status=status, error_code=error_code, idem_key=idem_key,
        replay=1 if replay else 0, request=_request_text(request)))
    return int(result.inserted_primary_key[0])


# Built once: `insert().values(...)` made (and coerced) a new statement for every request's row.
_AUDIT_INSERT = audit_events.insert()


def write(db: Database, actor: Actor, *, action: str, method: str, path: str, body: Any,
          fn: Callable[[Tx], Any], idem_key: str | None = None, permission: str | None = None,
          object_type: str | None = None, object_id: str | None = None,
          ok_status: int = 201) -> RequestOutcome:
    """Run a state change as `actor`, audited, honouring `Idempotency-Key`.

    Raises `Problem` for refusals and invalid input; the refusal is audited and nothing else
    changed (the audit row commits, the service function's work does not).
    """
    problem: Problem | None = None
    outcome: RequestOutcome | None = None
    with db.transaction() as conn:
        today = get_business_date(conn)
        audit_common = dict(business_date=today, method=method, path=path, action=action,
                            idem_key=idem_key, request=body)
        fp = fingerprint(method, path, body) if idem_key else None
        stored = None
        if idem_key:
            stored = conn.execute(select(idempotency).where(
                idempotency.c.user_id == actor.user_id, idempotency.c.key == idem_key)).mappings().first()
        if stored is not None and stored["fingerprint"] != fp:
            problem = Problem(409, "idempotency_key_reused",
                              "This Idempotency-Key was already used for a different request.",
                              outcome="invalid")
            _audit(conn, actor, outcome="invalid", status=409, error_code=problem.code, **audit_common)
        elif stored is not None:
            audit_id = _audit(conn, actor, outcome="ok", status=stored["status"], replay=True, **audit_common)
            outcome = RequestOutcome(stored["status"], _loads(stored["response"]), today, replay=True,
                              audit_id=audit_id)
        else:
            tx = Tx(conn=conn, actor=actor, business_date=today)
            try:
                with conn.begin_nested():
                    actor.require(permission or action)
                    data = fn(tx)
                    after = tx.after_images()
            except Problem as exc:
                problem = exc
                _audit(conn, actor, outcome=exc.outcome, status=exc.status, error_code=exc.code,
                       object_type=object_type, object_id=object_id, **audit_common)
            else:
                otype, oid = tx.primary or (object_type, object_id)
                audit_id = _audit(conn, actor, outcome="ok", status=ok_status,
                                  object_type=object_type or otype, object_id=object_id or oid,
                                  before=dict(tx.touched) or None, after=after or None, **audit_common)
                if idem_key:
                    conn.execute(idempotency.insert().values(
                        user_id=actor.user_id, key=idem_key, fingerprint=fp, status=ok_status,
                        response=canonical_json(data), audit_id=audit_id))
                outcome = RequestOutcome(ok_status, data, today, audit_id=audit_id)
    if problem is not None:
        problem.audited = True
        raise problem
    assert outcome is not None
    return outcome


def read(db: Database, actor: Actor, *, method: str, path: str, query: Any,
         fn: Callable[[Tx], Any], object_type: str | None = None, object_id: str | None = None) -> RequestOutcome:
    """Run a read as `actor`; it is audited like any request (action ``read``)."""
    problem: Problem | None = None
    with db.transaction() as conn:
        today = get_business_date(conn)
        tx = Tx(conn=conn, actor=actor, business_date=today)
        common = dict(business_date=today, method=method, path=path, action="read",
                      object_type=object_type, object_id=object_id, request=query)
        try:
            with conn.begin_nested():
                data = fn(tx)
        except Problem as exc:
            problem = exc
            _audit(conn, actor, outcome=exc.outcome, status=exc.status, error_code=exc.code, **common)
        else:
            audit_id = _audit(conn, actor, outcome="ok", status=200, **common)
    if problem is not None:
        problem.audited = True
        raise problem
    return RequestOutcome(200, data, today, audit_id=audit_id)


def audit_failure(db: Database, actor: Actor | None, *, method: str, path: str, action: str,
                  problem: Problem, request: Any = None) -> None:
    """Audit a request that failed before reaching a service function (auth, validation, routing)."""
    with db.transaction() as conn:
        _audit(conn, actor, business_date=get_business_date(conn), method=method, path=path,
               action=action, outcome=problem.outcome, status=problem.status,
               error_code=problem.code, request=request)


def audit_crash(db: Database, actor: Actor | None, *, method: str, path: str, action: str,
                request: Any, exc: BaseException) -> None:
    """Audit an unexpected exception (status 500) with its traceback, in a fresh transaction."""
    with db.transaction() as conn:
        _audit(conn, actor, business_date=get_business_date(conn), method=method, path=path,
               action=action, outcome="error", status=500, error_code="server_error",
               request={"request": request, "traceback": "".join(traceback.format_exception(exc))[-4000:]})


def _loads(text: str) -> Any:
    import json
    return json.loads(text)
