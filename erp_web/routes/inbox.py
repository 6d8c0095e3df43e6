"""The inbox: the person's messages, one message, and an attachment's bytes."""
from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from erp_web import views
from erp_web.deps import Client, Web

router = APIRouter()


@router.get("/inbox", response_class=HTMLResponse)
def inbox(request: Request, web: Web, c: Client, box: str = "", unread: str = "", offset: int = 0) -> HTMLResponse:
    res = c.get("/inbox", box=box, unread=unread, offset=offset, limit=views.PAGE)
    if not res.ok:
        return web.render(request, "error.html", client=c, status=res.status, message=res.message)
    return web.render(request, "inbox.html", client=c, items=res.data.get("items", []), total=res.data.get("total", 0),
                      box=box, unread=unread, offset=offset, page_size=views.PAGE)


@router.get("/inbox/{message_id}", response_class=HTMLResponse)
def message(request: Request, message_id: str, web: Web, c: Client) -> HTMLResponse:
    res = c.get(f"/inbox/{quote(message_id, safe='')}")
    if not res.ok:
        return web.render(request, "error.html", client=c, status=res.status, message=res.message)
    return web.render(request, "message.html", client=c, msg=res.data)


@router.get("/files/inbox/{message_id}/{n}")
def attachment(message_id: str, n: int, c: Client) -> Response:
    """An attachment's bytes, shown inline (a PDF opens in the browser's viewer)."""
    res = c.request("GET", f"/inbox/{quote(message_id, safe='')}/attachments/{n}")
    if not res.ok:
        return PlainTextResponse(res.message, status_code=res.status)
    return Response(res.raw, media_type=res.content_type.split(";")[0] or "application/octet-stream",
                    headers={"Content-Disposition": f'inline; filename="{message_id}-{n}"'})
