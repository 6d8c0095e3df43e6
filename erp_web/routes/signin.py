"""Signing in: the sign-in link of human mode (`/login?key=`) and the token form (`/signin`)."""
from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from erp_web.api_client import ApiClient
from erp_web.deps import Web
from erp_web.forms import first, parse_form

router = APIRouter()


@router.get("/login")
def login(web: Web, key: str = "") -> Response:
    """The sign-in link of human mode: the key printed for the person, once per session."""
    config = web.config
    if not config.login_key or not config.token or not hmac.compare_digest(key, config.login_key):
        return PlainTextResponse("This sign-in link is not valid.", status_code=403)
    return web.sign_in(config.token)


@router.get("/signin", response_class=HTMLResponse)
def signin_page(request: Request, web: Web) -> HTMLResponse:
    return web.render(request, "signin.html")


@router.post("/signin")
async def signin(request: Request, web: Web) -> Response:
    if web.config.human:
        return PlainTextResponse("Use the sign-in link you were given.", status_code=403)
    token = first(parse_form(await request.body()), "token").strip()
    who = ApiClient(web.config.api_url, token).get("/whoami")
    if not who.ok:
        return web.render(request, "signin.html", status=401, error=who.message)
    web.cache["me"] = who.data
    return web.sign_in(token)
