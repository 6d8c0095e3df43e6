"""The home page, the list of lists, and any list or document of the ERP (`/r/<collection>` and
`/r/<collection>/<id>`), drawn from the ERP's OpenAPI document: no per-document template."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from erp_web import views
from erp_web.api_client import ApiClient
from erp_web.deps import Client, Web, WebState
from erp_web.schema import Operation, humanize

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def home(request: Request, web: Web, c: Client) -> HTMLResponse:
    counts = {
        "unread": c.get("/inbox", unread="true", limit=1),
        "pending_changes": c.get("/vendor-bank-accounts", status="pending", limit=1),
        "approved": c.get("/ap-invoices", status="approved", limit=1),
        "draft_runs": c.get("/payment-runs", status="draft", limit=1),
    }
    totals = {k: (r.data or {}).get("total") if r.ok else None for k, r in counts.items()}
    banks = c.get("/bank-accounts")
    return web.render(request, "home.html", client=c, totals=totals, banks=(banks.data or {}).get("items", []) if banks.ok else [])


@router.get("/lists", response_class=HTMLResponse)
def all_lists(request: Request, web: Web, c: Client) -> HTMLResponse:
    groups: dict[str, list[Operation]] = {}
    for op in web.index().lists():
        if op.path not in ("/reports", "/inbox", "/audit"):
            groups.setdefault(op.tag, []).append(op)
    return web.render(request, "lists.html", client=c, groups=sorted(groups.items()))


@router.get("/r/{collection:path}", response_class=HTMLResponse)
def resource(request: Request, collection: str, web: Web, c: Client) -> HTMLResponse:
    parts = collection.strip("/").split("/")
    idx = web.index()
    base = "/" + "/".join(parts[:-1]) if len(parts) > 1 else None
    if base is not None and idx.find("GET", "/" + "/".join(parts)) is None and views.doc_template(idx, base):
        return _document(request, web, c, base, parts[-1])
    return _listing(request, web, c, "/" + "/".join(parts))


def _listing(request: Request, web: WebState, c: ApiClient, path: str) -> HTMLResponse:
    op = web.index().find("GET", path)
    if op is None:
        return web.render(request, "error.html", client=c, status=404, message=f"There is no list at {path}.")
    q = dict(request.query_params)
    offset = int(q.pop("offset", "0") or 0)
    q.pop("notice", None)
    filters = {f.name: q.get(f.name, "") for f in op.query}
    res = c.get(path, offset=offset, limit=views.PAGE, **filters)
    if not res.ok:
        return web.render(request, "error.html", client=c, status=res.status, message=res.message)
    page = res.data or {}
    items = page.get("items", []) if isinstance(page, dict) else list(page)
    create = web.index().creates_in(path)
    return web.render(request, "list.html", client=c, op=op, path=path, items=items, columns=views.columns_of(items),
                      total=page.get("total", len(items)) if isinstance(page, dict) else len(items), offset=offset,
                      page_size=views.PAGE, filters=filters, has_detail=views.doc_template(web.index(), path) is not None,
                      create=create, qs=lambda **kw: urlencode({k: v for k, v in {**filters, **kw}.items() if v not in ("", None)}))


def _document(request: Request, web: WebState, c: ApiClient, collection: str, doc_id: str) -> HTMLResponse:
    idx = web.index()
    template = views.doc_template(idx, collection) or collection + "/{id}"
    detail = idx.detail_of(collection)
    if detail is not None:
        res = c.get(detail.fill({detail.path_params[0]: doc_id}))
        doc = res.data if res.ok else None
    else:  # no document route (e.g. vendor bank accounts): the row of the list
        res = c.get(collection, limit=1000)
        doc = next((i for i in (res.data or {}).get("items", []) if i.get("id") == doc_id), None) if res.ok else None
    if doc is None:
        return web.render(request, "error.html", client=c, status=res.status if not res.ok else 404,
                          message=res.message if not res.ok else f"{doc_id} was not found in {collection}.")
    param = template.rsplit("{", 1)[-1].rstrip("}")
    actions = [(op, op.fill({param: doc_id})) for op in idx.actions_on(template)]
    scalars = {k: v for k, v in doc.items()
               if not isinstance(v, (list, dict)) or (isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v))}
    tables = {k: v for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
    empties = [k for k, v in doc.items() if isinstance(v, list) and not v]
    dicts = {k: v for k, v in doc.items() if isinstance(v, dict)}
    extra = _related_actions(collection, doc)
    candidates = _run_candidates(c, doc) if collection == "/payment-runs" and doc.get("status") == "draft" else []
    return web.render(request, "doc.html", client=c, collection=collection, doc=doc, doc_id=doc_id, scalars=scalars,
                      tables=tables, empties=empties, dicts=dicts, actions=actions, extra=extra, candidates=candidates,
                      kind=humanize(collection.strip("/")), back=f"/r{collection}")


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
