"""The control API: the host's handle on one attempt (contracts §3). It listens on its own
address, accepts only the control token, and never shares a route with the agent API.

Every error is application/problem+json. A storage failure (full disk, I/O error, the database
locked by another process) is a 503 ``storage_unavailable`` naming its cause — the host needs
the cause, unlike the agent — and `/control/health` answers 503 while the storage cannot take a
write, so the host never reads "ok" from an ERP that cannot carry out the next request."""
from __future__ import annotations

import hmac
import os
import tempfile
from collections.abc import Callable
from typing import Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from ..canonical import canonical_hash
from ..kernel.dates import IsoDate
from ..kernel.db import Database
from ..kernel.schema import audit_events
from ..sim import AdvanceError, World, advance
from .fault_layer import FaultLog

_bearer = HTTPBearer(auto_error=False)


class AdvanceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: IsoDate


def _problem(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"type": f"https://bb-erp.dev/errors/{code}", "title": code, "status": status,
                         "code": code, "detail": detail, **extra},
                        status_code=status, media_type="application/problem+json")


def _audit_row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out["replay"] = bool(out.get("replay"))
    return out


def create_control_app(db: Database, world: World, token: str, fault_log: FaultLog,
                       on_shutdown: Callable[[], None]) -> FastAPI:
    """The control application. `on_shutdown` stops both listeners."""
    app = FastAPI(title="bb-erp control", docs_url=None, redoc_url=None, openapi_url=None)

    def require_token(cred: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
        if cred is None or not hmac.compare_digest(cred.credentials.encode(), token.encode()):
            raise _Unauthorized()

    class _Unauthorized(Exception):
        pass

    @app.exception_handler(_Unauthorized)
    async def _unauth(request: Request, exc: Exception):
        return _problem(401, "unauthorized", "The control token is required.")

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        return _problem(422, "invalid", f"{where}: {first.get('msg', 'invalid value')}.")

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception):
        cause = db.note_failure(exc)
        if cause is not None:
            return _problem(503, "storage_unavailable", f"The ERP's storage failed: {cause}.")
        return _problem(500, "server_error", f"{type(exc).__name__}: {exc}")

    guard = [Depends(require_token)]

    @app.get("/control/health", dependencies=guard)
    def health():
        state = db.storage_health()
        if not state.ok:
            return _problem(503, "storage_unavailable", f"The ERP cannot write: {state.detail}.", ok=False,
                            last_storage_error=db.last_storage_error)
        return {"ok": True, "business_date": db.business_date()}

    @app.post("/control/advance", dependencies=guard)
    def do_advance(body: AdvanceIn):
        try:
            days = advance(db, world, body.to.isoformat())
        except ValueError as exc:
            return _problem(409, "bad_date", str(exc))
        except AdvanceError as exc:
            cause = db.note_failure(exc)
            if cause is not None:   # the storage failed, not the day's work: nothing to fix in the world
                return _problem(503, "storage_unavailable", f"The ERP's storage failed on {exc.day}: {cause}.",
                                day=exc.day)
            return _problem(409, "advance_failed", str(exc), day=exc.day, business_date=db.business_date())
        return {"business_date": db.business_date(), "days": days}

    @app.post("/control/flush", dependencies=guard)
    def flush():
        db.checkpoint()
        return {"ok": True}

    @app.get("/control/audit", dependencies=guard)
    def audit(after: int = Query(0, ge=0), limit: int = Query(1000, ge=1, le=10000)):
        with db.transaction() as conn:
            rows = [_audit_row(dict(r)) for r in conn.execute(
                select(audit_events).where(audit_events.c.id > after).order_by(audit_events.c.id).limit(limit)
            ).mappings()]
        return {"items": rows, "last_id": rows[-1]["id"] if rows else after}

    @app.get("/control/faults", dependencies=guard)
    def faults(after: int = Query(0, ge=0)):
        return {"items": fault_log.after(after)}

    @app.get("/control/snapshot", dependencies=guard)
    def snapshot():
        fd, tmp = tempfile.mkstemp(suffix=".db")
        os.close(fd)
        try:
            db.backup_to(tmp)
            with open(tmp, "rb") as fh:
                data = fh.read()
        finally:
            os.unlink(tmp)
        return Response(content=data, media_type="application/vnd.sqlite3")

    @app.get("/control/canonical-hash", dependencies=guard)
    def canonical():
        fd, tmp = tempfile.mkstemp(suffix=".db")
        os.close(fd)
        try:
            db.backup_to(tmp)
            return {"sha256": canonical_hash(tmp)}
        finally:
            os.unlink(tmp)

    @app.post("/control/shutdown", dependencies=guard)
    def shutdown():
        on_shutdown()
        return {"ok": True}

    return app
