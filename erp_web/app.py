"""The web UI: a FastAPI app of server-rendered pages over the agent API.

Every page asks the ERP with the signed-in user's token; every write form posts to `/act/<action
code>`, which sends exactly one API request (with an Idempotency-Key fixed when the form was
drawn, so a double click or a re-send after a lost answer replays instead of acting twice). A
problem answer is shown on the form, beside the field it names. Actions that commit something
(submit, approve, post, verify, ...) ask for a confirmation first.
"""
from __future__ import annotations

import hmac
import secrets
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from erp_web import views
from erp_web.api_client import ApiClient, ApiResult
from erp_web.config import WebConfig
from erp_web.forms import body_from_form, field_errors, first, parse_form
from erp_web.handbook import handbook_files, render_markdown
from erp_web.schema import ApiIndex, Operation, humanize
from erp_web.turns import TurnBoard

HERE = Path(__file__).parent
COOKIE = "erp_web_session"
PAGE = 50
# Actions that commit an effect a clerk should confirm before it is sent.
CONFIRM_VERBS = {"submit", "approve", "post", "release", "verify", "reject", "void", "cancel", "close", "reverse",
                 "withdraw", "reopen", "ship", "invoice", "apply", "complete", "issue", "return", "create_run"}
# The navigation: what a finance clerk looks for first; every other list is under "All lists".
NAV = [("Inbox", "/inbox"), ("AP invoices", "/r/ap-invoices"), ("Payment runs", "/r/payment-runs"),
       ("Vendors", "/r/vendors"), ("Bank changes", "/r/vendor-bank-accounts?status=pending"), ("Calls", "/r/calls"),
       ("Escalations", "/r/escalations"), ("Reports", "/reports")]


def create_app(config: WebConfig) -> FastAPI:
    """The app for one ERP (and, in human mode, one person's attempt)."""
    app = FastAPI(title=config.title, docs_url=None, redoc_url=None, openapi_url=None)
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.globals.update(cell=views.cell, humanize=humanize, money=views.money, nav=NAV, right_aligned=views.right_aligned,
                       newkey=lambda: uuid.uuid4().hex)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    sessions: dict[str, str] = {}  # session id -> user token
    board = TurnBoard(enabled=config.human)
    state: dict[str, Any] = {}

    def index() -> ApiIndex:
        if "index" not in state:
            doc = ApiClient(config.api_url, "").request("GET", "/openapi.json", auth=False)
            if not doc.ok or not isinstance(doc.data, dict):
                raise RuntimeError(f"the ERP's /openapi.json: {doc.message}")
            state["index"] = ApiIndex.from_openapi(doc.data)
            state["linker"] = views.Linker(state["index"])
        return state["index"]

    def token_of(request: Request) -> str | None:
        return sessions.get(request.cookies.get(COOKIE) or "")

    def render(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        client: ApiClient | None = ctx.pop("client", None)
        me = state.get("me")
        if client is not None and me is None:
            who = client.get("/whoami")
            if who.ok:
                state["me"] = me = who.data
        page = env.get_template(template).render(
            request=request, me=me, config=config, turn=board.current(), human=config.human,
            business_date=state.get("business_date") or (me or {}).get("business_date"),
            handbook=handbook_files(config.handbook_dir), notice=request.query_params.get("notice"),
            linker=state.get("linker"), **ctx)
        return HTMLResponse(page, status_code=status)

    def api(request: Request) -> ApiClient:
        token = token_of(request)
        if token is None:
            raise _Redirect("/signin")
        if not board.allows_work():
            raise _Redirect("/waiting")
        return _RecordingClient(config.api_url, token, state)

    # -- sign-in --------------------------------------------------------------------------------

    @app.exception_handler(_Redirect)
    async def _redirect(_request: Request, exc: _Redirect) -> Response:
        return RedirectResponse(exc.url, status_code=303)

    @app.get("/login")
    def login(key: str = "") -> Response:
        """The sign-in link of human mode: the key printed for the person, once per session."""
        if not config.login_key or not config.token or not hmac.compare_digest(key, config.login_key):
            return PlainTextResponse("This sign-in link is not valid.", status_code=403)
        return _signed_in(sessions, config.token)

    @app.get("/signin", response_class=HTMLResponse)
    def signin_page(request: Request) -> HTMLResponse:
        return render(request, "signin.html")

    @app.post("/signin")
    async def signin(request: Request) -> Response:
        if config.human:
            return PlainTextResponse("Use the sign-in link you were given.", status_code=403)
        token = first(parse_form(await request.body()), "token").strip()
        who = ApiClient(config.api_url, token).get("/whoami")
        if not who.ok:
            return render(request, "signin.html", status=401, error=who.message)
        state["me"] = who.data
        return _signed_in(sessions, token)

    # -- the turn (human mode) ------------------------------------------------------------------

    def host_ok(request: Request) -> bool:
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return bool(config.host_token) and hmac.compare_digest(given, config.host_token or "")

    @app.post("/_turn")
    async def open_turn(request: Request) -> Response:
        """The host opens a turn: {n, of, date, request, from_name, budget_s}."""
        if not host_ok(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        b = await request.json()
        state.pop("me", None)  # the business date moved on
        t = board.open_turn(int(b["n"]), int(b.get("of") or b["n"]), str(b["date"]), str(b["request"]),
                            str(b.get("from_name") or ""), float(b["budget_s"]))
        return JSONResponse({"turn": t.n, "open": True})

    @app.get("/_turn")
    def turn_state(request: Request) -> Response:
        if not host_ok(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return JSONResponse(board.state())

    @app.post("/_turn/close")
    async def close_turn(request: Request) -> Response:
        """The host ends the turn (its budget, or the attempt stopping); `{"finished": true}` after the last."""
        if not host_ok(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        b = await request.json()
        if b.get("finished"):
            board.finish()
        elif (t := board.current()) is not None:
            board.end(t.n, "host")
        return JSONResponse(board.state())

    @app.post("/turn/end")
    async def end_turn(request: Request) -> Response:
        """The person's "End turn" button."""
        if token_of(request) is None:
            return RedirectResponse("/signin", status_code=303)
        n = first(parse_form(await request.body()), "turn")
        if n.isdigit():
            board.end(int(n), "person")
        return RedirectResponse("/waiting", status_code=303)

    @app.get("/waiting", response_class=HTMLResponse)
    def waiting(request: Request) -> Response:
        if board.allows_work():
            return RedirectResponse("/", status_code=303)
        return render(request, "waiting.html", last=board.state())

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"ok": True, **board.state()}

    # -- pages ----------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request) -> HTMLResponse:
        c = api(request)
        counts = {
            "unread": c.get("/inbox", unread="true", limit=1),
            "pending_changes": c.get("/vendor-bank-accounts", status="pending", limit=1),
            "approved": c.get("/ap-invoices", status="approved", limit=1),
            "draft_runs": c.get("/payment-runs", status="draft", limit=1),
        }
        totals = {k: (r.data or {}).get("total") if r.ok else None for k, r in counts.items()}
        banks = c.get("/bank-accounts")
        return render(request, "home.html", client=c, totals=totals, banks=(banks.data or {}).get("items", []) if banks.ok else [])

    @app.get("/lists", response_class=HTMLResponse)
    def all_lists(request: Request) -> HTMLResponse:
        c = api(request)
        groups: dict[str, list[Operation]] = {}
        for op in index().lists():
            if op.path not in ("/reports", "/inbox", "/audit"):
                groups.setdefault(op.tag, []).append(op)
        return render(request, "lists.html", client=c, groups=sorted(groups.items()))

    @app.get("/r/{collection:path}", response_class=HTMLResponse)
    def resource(request: Request, collection: str) -> HTMLResponse:
        c = api(request)
        parts = collection.strip("/").split("/")
        idx = index()
        base = "/" + "/".join(parts[:-1]) if len(parts) > 1 else None
        if base is not None and idx.find("GET", "/" + "/".join(parts)) is None and _doc_template(idx, base):
            return document(request, c, base, parts[-1])
        return listing(request, c, "/" + "/".join(parts))

    def listing(request: Request, c: ApiClient, path: str) -> HTMLResponse:
        op = index().find("GET", path)
        if op is None:
            return render(request, "error.html", client=c, status=404, message=f"There is no list at {path}.")
        q = dict(request.query_params)
        offset = int(q.pop("offset", "0") or 0)
        q.pop("notice", None)
        filters = {f.name: q.get(f.name, "") for f in op.query}
        res = c.get(path, offset=offset, limit=PAGE, **filters)
        if not res.ok:
            return render(request, "error.html", client=c, status=res.status, message=res.message)
        page = res.data or {}
        items = page.get("items", []) if isinstance(page, dict) else list(page)
        create = index().creates_in(path)
        return render(request, "list.html", client=c, op=op, path=path, items=items, columns=views.columns_of(items),
                      total=page.get("total", len(items)) if isinstance(page, dict) else len(items), offset=offset, page_size=PAGE,
                      filters=filters, has_detail=_doc_template(index(), path) is not None, create=create,
                      qs=lambda **kw: urlencode({k: v for k, v in {**filters, **kw}.items() if v not in ("", None)}))

    def document(request: Request, c: ApiClient, collection: str, doc_id: str) -> HTMLResponse:
        idx = index()
        template = _doc_template(idx, collection) or collection + "/{id}"
        detail = idx.detail_of(collection)
        if detail is not None:
            res = c.get(detail.fill({detail.path_params[0]: doc_id}))
            doc = res.data if res.ok else None
        else:  # no document route (e.g. vendor bank accounts): the row of the list
            res = c.get(collection, limit=1000)
            doc = next((i for i in (res.data or {}).get("items", []) if i.get("id") == doc_id), None) if res.ok else None
        if doc is None:
            return render(request, "error.html", client=c, status=res.status if not res.ok else 404,
                          message=res.message if not res.ok else f"{doc_id} was not found in {collection}.")
        param = _PARAM_NAME(template)
        actions = [(op, op.fill({param: doc_id})) for op in idx.actions_on(template)]
        scalars = {k: v for k, v in doc.items() if not isinstance(v, (list, dict)) or (isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v))}
        tables = {k: v for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
        empties = [k for k, v in doc.items() if isinstance(v, list) and not v]
        dicts = {k: v for k, v in doc.items() if isinstance(v, dict)}
        extra = _related_actions(collection, doc)
        candidates = _run_candidates(c, doc) if collection == "/payment-runs" and doc.get("status") == "draft" else []
        return render(request, "doc.html", client=c, collection=collection, doc=doc, doc_id=doc_id, scalars=scalars,
                      tables=tables, empties=empties, dicts=dicts, actions=actions, extra=extra, candidates=candidates,
                      kind=humanize(collection.strip("/")), back=f"/r{collection}")

    @app.get("/inbox", response_class=HTMLResponse)
    def inbox(request: Request, box: str = "", unread: str = "", offset: int = 0) -> HTMLResponse:
        c = api(request)
        res = c.get("/inbox", box=box, unread=unread, offset=offset, limit=PAGE)
        if not res.ok:
            return render(request, "error.html", client=c, status=res.status, message=res.message)
        return render(request, "inbox.html", client=c, items=res.data.get("items", []), total=res.data.get("total", 0),
                      box=box, unread=unread, offset=offset, page_size=PAGE)

    @app.get("/inbox/{message_id}", response_class=HTMLResponse)
    def message(request: Request, message_id: str) -> HTMLResponse:
        c = api(request)
        res = c.get(f"/inbox/{quote(message_id, safe='')}")
        if not res.ok:
            return render(request, "error.html", client=c, status=res.status, message=res.message)
        return render(request, "message.html", client=c, msg=res.data)

    @app.get("/files/inbox/{message_id}/{n}")
    def attachment(request: Request, message_id: str, n: int) -> Response:
        """An attachment's bytes, shown inline (a PDF opens in the browser's viewer)."""
        c = api(request)
        res = c.request("GET", f"/inbox/{quote(message_id, safe='')}/attachments/{n}")
        if not res.ok:
            return PlainTextResponse(res.message, status_code=res.status)
        return Response(res.raw, media_type=res.content_type.split(";")[0] or "application/octet-stream",
                        headers={"Content-Disposition": f'inline; filename="{message_id}-{n}"'})

    @app.get("/reports", response_class=HTMLResponse)
    def reports(request: Request) -> HTMLResponse:
        c = api(request)
        res = c.get("/reports")
        return render(request, "reports.html", client=c, reports=res.data if res.ok else [], error=None if res.ok else res.message)

    @app.get("/reports/{report_id}", response_class=HTMLResponse)
    def report(request: Request, report_id: str) -> HTMLResponse:
        c = api(request)
        listing_ = c.get("/reports")
        info = next((r for r in (listing_.data or []) if r.get("id") == report_id), {"id": report_id, "title": report_id, "params": []})
        params = {p: request.query_params.get(p, "") for p in info.get("params", [])}
        res = c.get(f"/reports/{quote(report_id, safe='')}", **params)
        data = res.data if res.ok else {}
        rows: list[dict[str, Any]] = []
        if isinstance(data, dict):  # `rows`, or a report's own name for them (cash-position: `accounts`)
            rows = data.get("rows") or next((v for v in data.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)), [])
        elif isinstance(data, list):
            rows = [r for r in data if isinstance(r, dict)]
        return render(request, "report.html", client=c, info=info, params=params, data=data, rows=rows,
                      columns=views.columns_of(rows, limit=14), error=None if res.ok else res.message)

    @app.get("/handbook", response_class=HTMLResponse)
    @app.get("/handbook/{name}", response_class=HTMLResponse)
    def handbook(request: Request, name: str = "README.md") -> HTMLResponse:
        c = api(request)
        files = dict(handbook_files(config.handbook_dir))
        if name not in files or config.handbook_dir is None:
            return render(request, "error.html", client=c, status=404, message="There is no such handbook page.")
        body = render_markdown((config.handbook_dir / name).read_text(encoding="utf-8"))
        return render(request, "handbook.html", client=c, name=name, body=body)

    # -- write actions --------------------------------------------------------------------------

    @app.get("/act/{op_id}", response_class=HTMLResponse)
    def action_form(request: Request, op_id: str) -> HTMLResponse:
        c = api(request)
        op = index().get(op_id)
        if op is None or op.method == "GET":
            return render(request, "error.html", client=c, status=404, message=f"There is no action {op_id}.")
        values = {k: [v] for k, v in request.query_params.items()}
        today = state.get("business_date")
        for f in op.body:  # a required date starts as the business date (a pay date, a receipt date)
            if f.kind == "date" and f.required and today and not first(values, f.name):
                values[f.name] = [str(today)]
        return render_form(request, c, op, values, uuid.uuid4().hex)

    def render_form(request: Request, c: ApiClient, op: Operation, values: dict[str, list[str]], key: str,
                    problem: dict[str, Any] | None = None, status: int = 200) -> HTMLResponse:
        errors, top = field_errors(problem, op.body)
        path_values = {p: first(values, p) for p in op.path_params}
        return render(request, "form.html", client=c, status=status, op=op, values=values, key=key, errors=errors,
                      top_error=top, problem=problem, path_values=path_values, next_url=first(values, "_next"),
                      lookups=_lookups(c, op))

    @app.post("/act/{op_id}", response_class=HTMLResponse)
    async def action_send(request: Request, op_id: str) -> Response:
        c = api(request)
        op = index().get(op_id)
        if op is None or op.method == "GET":
            return render(request, "error.html", client=c, status=404, message=f"There is no action {op_id}.")
        form = parse_form(await request.body())
        key = first(form, "_key") or uuid.uuid4().hex
        path_values = {p: first(form, p) for p in op.path_params}
        missing = [p for p, v in path_values.items() if not v.strip()]
        if missing:
            problem = {"detail": f"{', '.join(humanize(m) for m in missing)} must be given.", "code": "invalid"}
            return render_form(request, c, op, form, key, problem, status=422)
        body = body_from_form(op.body, form) if op.has_body else None
        if op.has_body and not op.body_required and not body:
            body = None
        if op.verb in CONFIRM_VERBS and first(form, "_confirmed") != "yes":
            return render(request, "confirm.html", client=c, op=op, form=form, body=body, path=op.fill(path_values))
        res = c.request(op.method, op.fill(path_values), body=body, key=key)
        if not res.ok:
            return render_form(request, c, op, form, key, res.problem or {"detail": res.message}, status=res.status)
        return after_success(request, c, op, res, first(form, "_next"))

    def after_success(request: Request, c: ApiClient, op: Operation, res: ApiResult, next_url: str) -> Response:
        data = res.data if isinstance(res.data, dict) else {}
        notice = f"Done: {op.title}" + (f" — {data.get('id')}" if data.get("id") else "") + (" (repeated request: the first result)" if res.replay else "")
        collection = "/" + op.path.strip("/").split("/")[0]
        if op.op_id == "call" or not data.get("id") or (next_url and op.method != "POST"):
            return render(request, "result.html", client=c, op=op, data=data, notice_text=notice, next_url=next_url)
        if next_url:
            return RedirectResponse(f"{next_url}{'&' if '?' in next_url else '?'}notice={quote(notice)}", status_code=303)
        target = f"/r{collection}/{quote(str(data['id']), safe='')}" if _doc_template(index(), collection) else f"/r{collection}"
        if collection == "/inbox":
            target = f"/inbox/{quote(str(data.get('id')), safe='')}"
        return RedirectResponse(f"{target}?notice={quote(notice)}", status_code=303)

    return app


class _Redirect(Exception):  # noqa: N818 — control flow, not an error
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class _RecordingClient(ApiClient):
    """An ApiClient that keeps the latest business date for the page header."""

    def __init__(self, base_url: str, token: str, state: dict[str, Any]) -> None:
        super().__init__(base_url, token)
        self._state = state

    def request(self, method: str, path: str, **kw: Any) -> ApiResult:
        res = super().request(method, path, **kw)
        if res.business_date:
            self._state["business_date"] = res.business_date
        return res


def _signed_in(sessions: dict[str, str], token: str) -> Response:
    sid = secrets.token_urlsafe(24)
    sessions[sid] = token
    resp = RedirectResponse("/", status_code=303)
    resp.set_cookie(COOKIE, sid, httponly=True, samesite="strict")
    return resp


def _PARAM_NAME(template: str) -> str:  # noqa: N802 — reads as a constant lookup
    return template.rsplit("{", 1)[-1].rstrip("}")


def _doc_template(idx: ApiIndex, collection: str) -> str | None:
    """The path template of one document of `collection`: its GET route, else its actions' prefix."""
    detail = idx.detail_of(collection)
    if detail is not None:
        return detail.path
    for op in idx.ops.values():
        rest = op.path[len(collection):]
        if op.method != "GET" and op.path.startswith(collection + "/{") and rest.count("/") >= 1:
            return collection + "/" + rest.split("/")[1]
    return None


def _related_actions(collection: str, doc: dict[str, Any]) -> list[tuple[str, str]]:
    """Buttons that act on this document through another route: call its party, escalate it."""
    out: list[tuple[str, str]] = []
    singular = collection.strip("/").replace("-", "_")
    singular = singular[:-3] + "y" if singular.endswith("ies") else singular[:-1] if singular.endswith("s") else singular
    doc_id = str(doc.get("id", ""))
    vendor = doc_id if collection == "/vendors" else doc.get("vendor") or doc.get("vendor_id")
    if vendor:
        purpose = f"confirm bank-detail change {doc_id}" if collection == "/vendor-bank-accounts" else f"about {doc_id}"
        out.append(("Call the vendor (number on file)", "/act/call?" + urlencode({"party_type": "vendor", "party_id": vendor, "purpose": purpose})))
    customer = doc_id if collection == "/customers" else doc.get("customer") or doc.get("customer_id")
    if customer:
        out.append(("Call the customer (number on file)", "/act/call?" + urlencode({"party_type": "customer", "party_id": customer})))
    if doc_id:
        out.append(("Escalate", "/act/escalate?" + urlencode({"record_type": singular, "record_id": doc_id})))
    return out


def _run_candidates(c: ApiClient, run: dict[str, Any]) -> list[dict[str, Any]]:
    """Approved invoices not yet in this draft run, for the run's "add" table (by due date)."""
    res = c.get("/ap-invoices", status="approved", limit=1000)
    if not res.ok:
        return []
    in_run = set(_invoices_in(run.get("payments") or []))
    items = [i for i in res.data.get("items", []) if i.get("id") not in in_run]
    return sorted(items, key=lambda i: (str(i.get("due_date")), str(i.get("id"))))


def _invoices_in(value: Any) -> list[str]:
    """Every `invoice` id anywhere in a run's payments and their allocations."""
    if isinstance(value, list):
        return [i for v in value for i in _invoices_in(v)]
    if isinstance(value, dict):
        own = [str(value["invoice"])] if value.get("invoice") else []
        return own + [i for v in value.values() if isinstance(v, (list, dict)) for i in _invoices_in(v)]
    return []


def _lookups(c: ApiClient, op: Operation) -> dict[str, list[tuple[str, str]]]:
    """Choices offered for fields that name another record (bank account, user to escalate to)."""
    out: dict[str, list[tuple[str, str]]] = {}
    names = {f.name for f in op.body}
    if "bank_account" in names:
        res = c.get("/bank-accounts")
        out["bank_account"] = [(a["id"], f"{a['id']} — {a.get('name', '')}") for a in (res.data or {}).get("items", [])] if res.ok else []
    if "to" in names and op.op_id == "escalate":
        res = c.get("/users", limit=1000)
        out["to"] = [(u["id"], f"{u.get('name', u['id'])} ({u.get('title', '')})") for u in (res.data or {}).get("items", [])
                     if u.get("kind", "staff") == "staff"] if res.ok else []
    return out
