"""Write actions: `/act/<action code>` draws the operation's form (GET) and sends exactly one API
request (POST) with the Idempotency-Key fixed when the form was drawn, so a double click or a
re-send after a lost answer replays instead of acting twice. A problem answer is shown on the
form, beside the field it names. Actions that commit something ask for a confirmation first.
"""
from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from erp_web import views
from erp_web.api_client import ApiClient, ApiResult
from erp_web.deps import Client, Web, WebState
from erp_web.forms import body_from_form, field_errors, first, parse_form
from erp_web.schema import Operation, humanize

# Actions that commit an effect a clerk should confirm before it is sent.
CONFIRM_VERBS = {"submit", "approve", "post", "release", "verify", "reject", "void", "cancel", "close", "reverse",
                 "withdraw", "reopen", "ship", "invoice", "apply", "complete", "issue", "return", "create_run"}

router = APIRouter()


@router.get("/act/{op_id}", response_class=HTMLResponse)
def action_form(request: Request, op_id: str, web: Web, c: Client) -> HTMLResponse:
    op = web.index().get(op_id)
    if op is None or op.method == "GET":
        return web.render(request, "error.html", client=c, status=404, message=f"There is no action {op_id}.")
    values = {k: [v] for k, v in request.query_params.items()}
    today = web.cache.get("business_date")
    for f in op.body:  # a required date starts as the business date (a pay date, a receipt date)
        if f.kind == "date" and f.required and today and not first(values, f.name):
            values[f.name] = [str(today)]
    return _render_form(request, web, c, op, values, uuid.uuid4().hex)


@router.post("/act/{op_id}", response_class=HTMLResponse)
async def action_send(request: Request, op_id: str, web: Web, c: Client) -> Response:
    op = web.index().get(op_id)
    if op is None or op.method == "GET":
        return web.render(request, "error.html", client=c, status=404, message=f"There is no action {op_id}.")
    form = parse_form(await request.body())
    key = first(form, "_key") or uuid.uuid4().hex
    path_values = {p: first(form, p) for p in op.path_params}
    missing = [p for p, v in path_values.items() if not v.strip()]
    if missing:
        problem = {"detail": f"{', '.join(humanize(m) for m in missing)} must be given.", "code": "invalid"}
        return _render_form(request, web, c, op, form, key, problem, status=422)
    body = body_from_form(op.body, form) if op.has_body else None
    if op.has_body and not op.body_required and not body:
        body = None
    if op.verb in CONFIRM_VERBS and first(form, "_confirmed") != "yes":
        return web.render(request, "confirm.html", client=c, op=op, form=form, body=body, path=op.fill(path_values))
    res = c.request(op.method, op.fill(path_values), body=body, key=key)
    if not res.ok:
        return _render_form(request, web, c, op, form, key, res.problem or {"detail": res.message}, status=res.status)
    return _after_success(request, web, c, op, res, first(form, "_next"))


def _render_form(request: Request, web: WebState, c: ApiClient, op: Operation, values: dict[str, list[str]], key: str,
                 problem: dict[str, Any] | None = None, status: int = 200) -> HTMLResponse:
    errors, top = field_errors(problem, op.body)
    path_values = {p: first(values, p) for p in op.path_params}
    return web.render(request, "form.html", client=c, status=status, op=op, values=values, key=key, errors=errors,
                      top_error=top, problem=problem, path_values=path_values, next_url=first(values, "_next"),
                      lookups=_lookups(c, op))


def _after_success(request: Request, web: WebState, c: ApiClient, op: Operation, res: ApiResult, next_url: str) -> Response:
    data = res.data if isinstance(res.data, dict) else {}
    notice = (f"Done: {op.title}" + (f" — {data.get('id')}" if data.get("id") else "")
              + (" (repeated request: the first result)" if res.replay else ""))
    collection = "/" + op.path.strip("/").split("/")[0]
    if op.op_id == "call" or not data.get("id") or (next_url and op.method != "POST"):
        return web.render(request, "result.html", client=c, op=op, data=data, notice_text=notice, next_url=next_url)
    if next_url:
        return RedirectResponse(f"{next_url}{'&' if '?' in next_url else '?'}notice={quote(notice)}", status_code=303)
    target = f"/r{collection}/{quote(str(data['id']), safe='')}" if views.doc_template(web.index(), collection) else f"/r{collection}"
    if collection == "/inbox":
        target = f"/inbox/{quote(str(data.get('id')), safe='')}"
    return RedirectResponse(f"{target}?notice={quote(notice)}", status_code=303)


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
