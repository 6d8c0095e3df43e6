"""The host-side control API of the gateway: listens on the control network only.

| method, path | body / query | answer |
|---|---|---|
| GET /control/health | | `{"ok", "attempt_id", "turn", "revoked", "price_version"}` |
| POST /control/turn | `{"turn": n}` | marks the turn later usage-log rows belong to |
| GET /control/usage-log | `?after=SEQ&limit=N` | `{"items": [rows with seq > SEQ], "last_seq"}` |
| GET /control/usage | | totals of forwarded calls: requests, tokens, cost_usd |
| GET /control/provider-wait | `?turn=N` (default: the current turn) | `{"turn", "provider_wait_s"}`: model_gateway.wait_clock |
| POST /control/revoke | | the virtual key stops working at once (the attempt ended) |
| POST /control/shutdown | | `{"ok": true}`, then the process exits |

Every endpoint needs `Authorization: Bearer <control token>`.
"""
from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import asdict

from fastapi import Depends, FastAPI, Query
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from .proxy import GatewayState

_bearer = HTTPBearer(auto_error=False)


class TurnMark(BaseModel):
    turn: int = Field(ge=0)


class _Unauthorized(Exception):
    pass


def create_control_app(state: GatewayState, token: str, stop: Callable[[], None]) -> FastAPI:
    """The control app over the shared gateway state."""
    app = FastAPI(title="model-gateway control", openapi_url=None, docs_url=None, redoc_url=None)

    def require_token(cred: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
        if cred is None or not hmac.compare_digest(cred.credentials.encode(), token.encode()):
            raise _Unauthorized()

    @app.exception_handler(_Unauthorized)
    async def _unauth(_request, _exc):
        return JSONResponse({"code": "unauthorized", "detail": "The control token is required."}, status_code=401)

    guard = [Depends(require_token)]

    @app.get("/control/health", dependencies=guard)
    def health() -> dict:
        return {"ok": True, "attempt_id": state.config.attempt_id, "turn": state.usage_log.turn,
                "revoked": state.revoked, "price_version": state.prices.version}

    @app.post("/control/turn", dependencies=guard)
    def mark_turn(mark: TurnMark) -> dict:
        state.usage_log.turn = mark.turn
        return {"ok": True, "turn": mark.turn, "seq": len(state.usage_log.rows)}

    @app.get("/control/usage-log", dependencies=guard)
    def usage_log(after: int = Query(0, ge=0), limit: int = Query(1000, ge=1, le=5000)) -> dict:
        items = state.usage_log.after(after, limit)
        return {"items": items, "last_seq": items[-1]["seq"] if items else after}

    @app.get("/control/usage", dependencies=guard)
    def usage() -> dict:
        return asdict(state.usage_log.totals) | {"price_version": state.prices.version}

    @app.get("/control/provider-wait", dependencies=guard)
    def provider_wait(turn: int | None = Query(None, ge=0)) -> dict:
        which = state.usage_log.turn if turn is None else turn
        return {"turn": which, "provider_wait_s": state.wait_clock.wait_s(which)}

    @app.post("/control/revoke", dependencies=guard)
    def revoke() -> dict:
        state.revoked = True
        return {"ok": True, "revoked": True}

    @app.post("/control/shutdown", dependencies=guard)
    def shutdown() -> dict:
        stop()
        return {"ok": True}

    return app
