"""What every route of the web UI depends on: the app's state, the signed-in person's ERP client,
and the page renderer.

`WebState` is made once per app (`create_app`) and kept on `app.state.web`: the settings, the
templates, the sessions (cookie → the person's API token), the turn board and what the pages
cache of the ERP (its API index, the signed-in user, the latest business date). The routers
reach it through the dependencies below (`Web`, `Client`), as the FastAPI project template's
`deps.py` does for its database session and current user.
"""
from __future__ import annotations

import secrets
import uuid
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from erp_web import views
from erp_web.api_client import ApiClient, ApiResult
from erp_web.config import WebConfig
from erp_web.handbook import handbook_files
from erp_web.schema import ApiIndex, humanize
from erp_web.turns import TurnBoard

HERE = Path(__file__).parent
COOKIE = "erp_web_session"
# The navigation: what a finance clerk looks for first; every other list is under "All lists".
NAV = [("Inbox", "/inbox"), ("AP invoices", "/r/ap-invoices"), ("Payment runs", "/r/payment-runs"),
       ("Vendors", "/r/vendors"), ("Bank changes", "/r/vendor-bank-accounts?status=pending"), ("Calls", "/r/calls"),
       ("Escalations", "/r/escalations"), ("Reports", "/reports")]


class Redirect(Exception):  # noqa: N818 — control flow, not an error
    """Raised by a dependency to send the browser elsewhere (303): signed out, or between turns."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class WebState:
    """One web UI's settings, templates, sessions, turn board and its cache of the ERP's answers."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
        self.env.globals.update(cell=views.cell, humanize=humanize, money=views.money, nav=NAV,
                                right_aligned=views.right_aligned, newkey=lambda: uuid.uuid4().hex)
        self.sessions: dict[str, str] = {}  # session id -> user token
        self.board = TurnBoard(enabled=config.human)
        self.cache: dict[str, Any] = {}  # index, linker, me, business_date

    def index(self) -> ApiIndex:
        """The ERP's operations, read from its /openapi.json on first use."""
        if "index" not in self.cache:
            doc = ApiClient(self.config.api_url, "").request("GET", "/openapi.json", auth=False)
            if not doc.ok or not isinstance(doc.data, dict):
                raise RuntimeError(f"the ERP's /openapi.json: {doc.message}")
            self.cache["index"] = ApiIndex.from_openapi(doc.data)
            self.cache["linker"] = views.Linker(self.cache["index"])
        return self.cache["index"]

    def token_of(self, request: Request) -> str | None:
        """The API token of the request's session, if it is signed in."""
        return self.sessions.get(request.cookies.get(COOKIE) or "")

    def sign_in(self, token: str) -> Response:
        """A new session for `token`: its cookie, and off to the home page."""
        sid = secrets.token_urlsafe(24)
        self.sessions[sid] = token
        resp = RedirectResponse("/", status_code=303)
        resp.set_cookie(COOKIE, sid, httponly=True, samesite="strict")
        return resp

    def render(self, request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        """A page; with `client=`, the signed-in user is asked for once (the header shows them)."""
        client: ApiClient | None = ctx.pop("client", None)
        me = self.cache.get("me")
        if client is not None and me is None:
            who = client.get("/whoami")
            if who.ok:
                self.cache["me"] = me = who.data
        config = self.config
        page = self.env.get_template(template).render(
            request=request, me=me, config=config, turn=self.board.current(), human=config.human,
            business_date=self.cache.get("business_date") or (me or {}).get("business_date"),
            handbook=handbook_files(config.handbook_dir), notice=request.query_params.get("notice"),
            linker=self.cache.get("linker"), **ctx)
        return HTMLResponse(page, status_code=status)


class RecordingClient(ApiClient):
    """An ApiClient that keeps the latest business date for the page header."""

    def __init__(self, base_url: str, token: str, cache: dict[str, Any]) -> None:
        super().__init__(base_url, token)
        self._cache = cache

    def request(self, method: str, path: str, **kw: Any) -> ApiResult:
        res = super().request(method, path, **kw)
        if res.business_date:
            self._cache["business_date"] = res.business_date
        return res


def get_web(request: Request) -> WebState:
    """The app's `WebState`."""
    return request.app.state.web


Web = Annotated[WebState, Depends(get_web)]


def signed_in_client(request: Request, web: Web) -> ApiClient:
    """The ERP as the signed-in person: to the sign-in page without a session, to the waiting
    page between turns (human mode)."""
    token = web.token_of(request)
    if token is None:
        raise Redirect("/signin")
    if not web.board.allows_work():
        raise Redirect("/waiting")
    return RecordingClient(web.config.api_url, token, web.cache)


Client = Annotated[ApiClient, Depends(signed_in_client)]
