"""The one path every request takes: permission, idempotency, transaction, audit.

The agent API, the counterparties (`sim/`) and the scenario generators all call `write` and
`read` here, so every change anywhere is permission-checked and audited the same way.

One request = one transaction, and one audit row in it. A refusal (a `Problem` from the
permission check or the service function) rolls the whole transaction back and its audit row is
committed in a second one, under the same database lock, so nothing else changed and nothing
ran in between; no savepoint is paid for on the usual path. Any other exception rolls back
everything; its audit row is written in a fresh transaction and a 500 problem is raised.
"""
from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .clock import get_business_date, wall_now
from .db import Database, driver_of
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
    cur = driver_of(conn).execute(_AUDIT_INSERT, (
        business_date, wall_now(), channel or (actor.channel if actor else "api"),
        actor.user_id if actor else None, actor.token_id if actor else None,
        method, path, action, object_type, object_id,
        canonical_json(before) if before is not None else None,
        canonical_json(after) if after is not None else None,
        outcome, status, error_code, idem_key, 1 if replay else 0, _request_text(request)))
    return int(cur.lastrowid)  # type: ignore[arg-type]


# The pipeline's own statements go to the driver as fixed SQL text (sqlite3 keeps them prepared):
# through SQLAlchemy each one built, keyed, looked up and wrapped a statement per request. The
# columns are all TEXT/INTEGER (no type processing) and the values are the ones SQLAlchemy bound.
def _quoted(name: str) -> str:
    return '"' + name + '"'


_AUDIT_COLUMNS = ("business_date", "wall_time", "channel", "actor", "token_id", "method", "path", "action",
                  "object_type", "object_id", "before", "after", "outcome", "status", "error_code",
                  "idem_key", "replay", "request")
_AUDIT_INSERT = (f"INSERT INTO {audit_events.name} ({', '.join(map(_quoted, _AUDIT_COLUMNS))}) "
                 f"VALUES ({', '.join('?' for _ in _AUDIT_COLUMNS)})")
if tuple(c.name for c in audit_events.columns if c.name != "id") != _AUDIT_COLUMNS:
    raise RuntimeError("pipeline._AUDIT_COLUMNS no longer lists audit_events' columns (besides id)")
_IDEM_SELECT = (f'SELECT fingerprint, status, response FROM {idempotency.name} '
                f'WHERE user_id = ? AND "key" = ?')
_IDEM_INSERT = (f'INSERT INTO {idempotency.name} (user_id, "key", fingerprint, status, response, audit_id) '
                f'VALUES (?, ?, ?, ?, ?, ?)')


def write(db: Database, actor: Actor, *, action: str, method: str, path: str, body: Any,
          fn: Callable[[Tx], Any], idem_key: str | None = None, permission: str | None = None,
          object_type: str | None = None, object_id: str | None = None,
          ok_status: int = 201) -> RequestOutcome:
    """Run a state change as `actor`, audited, honouring `Idempotency-Key`.

    Raises `Problem` for refusals and invalid input; the refusal is audited and nothing else
    changed (the audit row commits, the service function's work does not).
    """
    problem: Problem | None = None
    refused: Problem | None = None
    outcome: RequestOutcome | None = None
    today = ""
    # The lock spans both transactions of a refusal: nothing runs between the rollback of the
    # service function's work and the refusal's audit row.
    with db.lock:
        try:
            with db.transaction() as conn:
                today = get_business_date(conn)
                fp = fingerprint(method, path, body) if idem_key else None
                stored = driver_of(conn).execute(_IDEM_SELECT, (actor.user_id, idem_key)).fetchone() \
                    if idem_key else None
                if stored is not None and stored[0] != fp:
                    problem = Problem(409, "idempotency_key_reused",
                                      "This Idempotency-Key was already used for a different request.",
                                      outcome="invalid")
                    _audit(conn, actor, outcome="invalid", status=409, error_code=problem.code,
                           business_date=today, method=method, path=path, action=action, idem_key=idem_key,
                           request=body)
                elif stored is not None:
                    audit_id = _audit(conn, actor, outcome="ok", status=stored[1], replay=True,
                                      business_date=today, method=method, path=path, action=action,
                                      idem_key=idem_key, request=body)
                    outcome = RequestOutcome(stored[1], _loads(stored[2]), today, replay=True, audit_id=audit_id)
                else:
                    tx = Tx(conn=conn, actor=actor, business_date=today)
                    # No savepoint around the service function: a refusal leaves this transaction
                    # (rolled back whole) and is audited in the next, under the same lock.
                    try:
                        actor.require(permission or action)
                        data = fn(tx)
                        after = tx.after_images()
                    except Problem as exc:
                        refused = exc
                        raise
                    otype, oid = tx.primary or (object_type, object_id)
                    audit_id = _audit(conn, actor, outcome="ok", status=ok_status,
                                      object_type=object_type or otype, object_id=object_id or oid,
                                      before=dict(tx.touched) or None, after=after or None,
                                      business_date=today, method=method, path=path, action=action,
                                      idem_key=idem_key, request=body)
                    if idem_key:
                        driver_of(conn).execute(_IDEM_INSERT, (actor.user_id, idem_key, fp, ok_status,
                                                               canonical_json(data), audit_id))
                    outcome = RequestOutcome(ok_status, data, today, audit_id=audit_id)
        except Problem as exc:
            if exc is not refused:
                raise
            with db.transaction() as conn:
                _audit(conn, actor, outcome=exc.outcome, status=exc.status, error_code=exc.code,
                       object_type=object_type, object_id=object_id, business_date=today, method=method,
                       path=path, action=action, idem_key=idem_key, request=body)
            problem = exc
    if problem is not None:
        problem.audited = True
        raise problem
    assert outcome is not None
    return outcome


def read(db: Database, actor: Actor, *, method: str, path: str, query: Any,
         fn: Callable[[Tx], Any], object_type: str | None = None, object_id: str | None = None) -> RequestOutcome:
    """Run a read as `actor`; it is audited like any request (action ``read``). A refusal is
    audited in a transaction of its own after the read's is rolled back (as for `write`)."""
    refused: Problem | None = None
    today = ""
    with db.lock:
        try:
            with db.transaction() as conn:
                today = get_business_date(conn)
                try:
                    data = fn(Tx(conn=conn, actor=actor, business_date=today))
                except Problem as exc:
                    refused = exc
                    raise
                audit_id = _audit(conn, actor, outcome="ok", status=200, business_date=today, method=method,
                                  path=path, action="read", object_type=object_type, object_id=object_id,
                                  request=query)
        except Problem as exc:
            if exc is not refused:
                raise
            with db.transaction() as conn:
                _audit(conn, actor, outcome=exc.outcome, status=exc.status, error_code=exc.code,
                       business_date=today, method=method, path=path, action="read",
                       object_type=object_type, object_id=object_id, request=query)
            exc.audited = True
            raise
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
