"""The turn of human mode: the host opens, polls and closes it (`/_turn`, with the host's
token); the person ends it (`/turn/end`) and waits between turns (`/waiting`); `/healthz`."""
from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from erp_web.deps import Web, WebState
from erp_web.forms import first, parse_form

router = APIRouter()


def _host_ok(request: Request, web: WebState) -> bool:
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    host_token = web.config.host_token
    return bool(host_token) and hmac.compare_digest(given, host_token or "")


@router.post("/_turn")
async def open_turn(request: Request, web: Web) -> Response:
    """The host opens a turn: {n, of, date, request, from_name, budget_s}."""
    if not _host_ok(request, web):
        return JSONResponse({"error": "unauthorized"}, status_code=401)
    b = await request.json()
    web.cache.pop("me", None)  # the business date moved on
    t = web.board.open_turn(int(b["n"]), int(b.get("of") or b["n"]), str(b["date"]), str(b["request"]),
                            str(b.get("from_name") or ""), float(b["budget_s"]))
    return JSONResponse({"turn": t.n, "open": True})


@router.get("/_turn")
def turn_state(request: Request, web: Web) -> Response:
    if not _host_ok(request, web):
        return JSONResponse({"error": "unauthorized"}, status_code=401)
    return JSONResponse(web.board.state())


@router.post("/_turn/close")
async def close_turn(request: Request, web: Web) -> Response:
    """The host ends the turn (its budget, or the attempt stopping); `{"finished": true}` after the last."""
    if not _host_ok(request, web):
        return JSONResponse({"error": "unauthorized"}, status_code=401)
    b = await request.json()
    if b.get("finished"):
        web.board.finish()
    elif (t := web.board.current()) is not None:
        web.board.end(t.n, "host")
    return JSONResponse(web.board.state())


@router.post("/turn/end")
async def end_turn(request: Request, web: Web) -> Response:
    """The person's "End turn" button."""
    if web.token_of(request) is None:
        return RedirectResponse("/signin", status_code=303)
    n = first(parse_form(await request.body()), "turn")
    if n.isdigit():
        web.board.end(int(n), "person")
    return RedirectResponse("/waiting", status_code=303)


@router.get("/waiting", response_class=HTMLResponse)
def waiting(request: Request, web: Web) -> Response:
    if web.board.allows_work():
        return RedirectResponse("/", status_code=303)
    return web.render(request, "waiting.html", last=web.board.state())


@router.get("/healthz")
def healthz(web: Web) -> dict[str, Any]:
    return {"ok": True, **web.board.state()}
