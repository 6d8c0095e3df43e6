"""`orchestrate review LABEL --serve`: the failure review in a browser.

A small FastAPI app on the host's loopback serves the label's report (orchestrator/report/) with,
beside each failed check on an attempt's page, a form that records a decision: `agent_wrong` or
`task_wrong` (with its kind), a note and the reviewer's name. A POSTed decision goes through the
same checks and the same append-only `reviews.jsonl` as the terminal's (decisions.py: who and
when, nothing written when it is refused), and the report is drawn again.

Why it is safe to leave running while the reviewer browses other sites:

- it binds a loopback address only (`LOOPBACK_HOSTS`; any other is refused before binding);
- every request must name a loopback host (`Host`), so a page of another site that rebinds its
  own name to 127.0.0.1 reads nothing and records nothing;
- a POST must carry the server's form token (random per run, only in the pages it serves, compared
  in constant time) and, when the browser says where it comes from (`Origin`, or `Referer`), come
  from this server's own origin: another site's page can neither forge nor replay a decision;
- the pages carry a content security policy that runs no script, loads nothing from elsewhere,
  posts forms only to this server and cannot be framed (no clickjacking); an agent's words shown
  on the pages are escaped text.

The report is drawn into a private temporary folder, never into the label (which only gains the
decisions' lines).
"""
from __future__ import annotations

import hmac
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from orchestrator.review.decisions import DECISIONS, DECISIONS_FILE, KINDS, ReviewError, append, new_decision, read_ledger

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
TOKEN_FIELD = "form_token"
DECIDE_PATH = "/decide"
HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _esc(value: Any) -> str:
    from html import escape

    return escape("" if value is None else str(value), quote=True)


def decision_form(token: str, attempt_id: str, check: str, who: str) -> str:
    """The HTML form that records one decision on one failed check (posted to this server)."""
    kinds = "".join(f"<option value='{_esc(k)}'>{_esc(k)}</option>" for k in KINDS)
    choices = "".join(f"<label><input type='radio' name='decision' value='{_esc(d)}' required> {_esc(d)}</label> "
                      for d in DECISIONS)
    return (f"<form class='decide' method='post' action='{DECIDE_PATH}'>"
            f"<input type='hidden' name='{TOKEN_FIELD}' value='{_esc(token)}'>"
            f"<input type='hidden' name='attempt_id' value='{_esc(attempt_id)}'>"
            f"<input type='hidden' name='check' value='{_esc(check)}'>{choices}"
            f"<select name='kind' aria-label='kind'><option value=''>(kind, with task_wrong)</option>{kinds}</select><br>"
            "<textarea name='note' rows='2' cols='40' placeholder='note (required with task_wrong)'></textarea><br>"
            f"<input name='who' value='{_esc(who)}' required aria-label='reviewer'> "
            "<button type='submit'>record</button></form>")


def host_is_loopback(host_header: str | None) -> bool:
    """True when a `Host` header (or an origin's netloc) names a loopback host, any port."""
    if not host_header:
        return False
    try:
        name = urlsplit(f"//{host_header}").hostname
    except ValueError:
        return False
    return name in LOOPBACK_HOSTS


def same_origin(headers: Any) -> str | None:
    """Why a POST does not come from this server's own pages (None: it does, or the browser did
    not say). Compared with the `Host` the request was sent to."""
    host = headers.get("host") or ""
    origin = headers.get("origin")
    if origin is not None:
        return None if origin == f"http://{host}" else f"origin {origin!r} is not this server (http://{host})"
    referer = headers.get("referer")
    if referer is not None:
        parts = urlsplit(referer)
        return None if (parts.scheme, parts.netloc) == ("http", host) else f"referer {referer!r} is not this server"
    return None


@dataclass
class ReviewSite:
    """The served label: where its report is drawn, the form token, the default reviewer."""

    runs_root: Path
    label: str
    reviewer: str
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    out: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pb-review-")))
    _drawn: tuple[int, int] | None = None

    @property
    def root(self) -> Path:
        """The label's folder."""
        return self.runs_root / self.label

    def _state(self) -> tuple[int, int]:
        path = self.root / DECISIONS_FILE
        if not path.is_file():
            return (0, 0)
        st = path.stat()
        return (st.st_size, st.st_mtime_ns)

    def draw(self, *, force: bool = False) -> None:
        """Draw the report with the forms (again when the decisions file changed, or `force`)."""
        from orchestrator.report.label_page import write_report

        state = self._state()
        if not force and state == self._drawn and (self.out / "report.html").is_file():
            return
        form: Callable[[str, str], str] = lambda attempt_id, check: decision_form(  # noqa: E731
            self.token, attempt_id, check, self.reviewer)
        write_report(self.runs_root, self.label, self.out / "report.html", review_form=form)
        self._drawn = state

    def close(self) -> None:
        """Remove the drawn report (the label keeps only the decisions)."""
        import shutil

        shutil.rmtree(self.out, ignore_errors=True)

    def page(self, rel: str) -> Path | None:
        """A drawn page by its path under the report (None: not one of its pages)."""
        if rel in ("", "/"):
            rel = "report.html"
        path = (self.out / rel.lstrip("/")).resolve()
        if self.out.resolve() not in path.parents or path.suffix != ".html" or not path.is_file():
            return None
        return path

    def decide(self, form: dict[str, str]) -> str:
        """Record the POSTed decision (ReviewError when refused; nothing written); return the
        attempt id it was recorded on."""
        lines = read_ledger(self.root)
        decision = new_decision(lines, form.get("attempt_id", ""), form.get("check", ""), form.get("decision", ""),
                                form.get("kind") or None, form.get("note", ""), form.get("who") or "")
        append(self.root, decision)
        self.draw(force=True)
        return decision.attempt_id


def create_app(site: ReviewSite) -> FastAPI:
    """The FastAPI app serving `site` (see the module doc for what it refuses)."""
    from orchestrator.report.label_page import page_name

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    def refuse(status: int, why: str) -> Response:
        return HTMLResponse(f"<!doctype html><title>refused</title><p>{_esc(why)}</p>", status_code=status,
                            headers=HEADERS)

    @app.middleware("http")
    async def loopback_only(request: Request, call_next: Any) -> Response:
        if not host_is_loopback(request.headers.get("host")):
            return refuse(421, "this review server answers only requests addressed to the loopback host")
        response: Response = await call_next(request)
        for k, v in HEADERS.items():
            response.headers.setdefault(k, v)
        return response

    @app.post(DECIDE_PATH)
    async def decide(request: Request) -> Response:
        raw = await request.body()
        form = dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
        if not hmac.compare_digest(form.get(TOKEN_FIELD, "").encode(), site.token.encode()):
            return refuse(403, "missing or wrong form token: decisions are recorded from this server's own pages only")
        elsewhere = same_origin(request.headers)
        if elsewhere:
            return refuse(403, elsewhere)
        try:
            attempt_id = site.decide(form)
        except ReviewError as exc:
            return refuse(400, str(exc))
        return RedirectResponse(f"/report_files/{page_name(attempt_id)}", status_code=303)

    @app.get("/{rel:path}")
    async def page(rel: str) -> Response:
        site.draw()
        path = site.page(rel)
        if path is None:
            return refuse(404, f"no page {rel!r} in the report")
        return HTMLResponse(path.read_text(encoding="utf-8"))

    return app


def check_host(host: str) -> None:
    """ReviewError unless `host` is a loopback address (the server never listens elsewhere)."""
    if host not in LOOPBACK_HOSTS:
        raise ReviewError(f"--host {host!r}: the review server listens on a loopback address only "
                          f"({', '.join(LOOPBACK_HOSTS)})")


def make_server(site: ReviewSite, *, host: str = "127.0.0.1", port: int = 0) -> tuple[Any, Any, str]:
    """(uvicorn server, its listening socket, its URL) for `site` on a loopback `host` (port 0: a
    free one); run it with `server.run(sockets=[sock])`, stop it with `server.should_exit = True`."""
    import socket

    import uvicorn

    check_host(host)
    site.draw(force=True)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))  # bound here so that port 0 gives a free port the URL can name
    sock.listen(64)
    name = f"[{host}]" if ":" in host else host
    server = uvicorn.Server(uvicorn.Config(create_app(site), log_level="warning", access_log=False))
    return server, sock, f"http://{name}:{sock.getsockname()[1]}/"


def serve(site: ReviewSite, *, host: str = "127.0.0.1", port: int = 0,
          ready: Callable[[str], None] | None = None) -> None:
    """Serve `site` until interrupted; `ready` is called with the URL once it listens."""
    server, sock, url = make_server(site, host=host, port=port)
    if ready is not None:
        ready(url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        site.close()
