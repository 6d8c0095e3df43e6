"""The handbook's pages (human mode: the folder the attempt's workspace holds), in Markdown."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from erp_web.deps import Client, Web
from erp_web.handbook import handbook_files, render_markdown

router = APIRouter()


@router.get("/handbook", response_class=HTMLResponse)
@router.get("/handbook/{name}", response_class=HTMLResponse)
def handbook(request: Request, web: Web, c: Client, name: str = "README.md") -> HTMLResponse:
    handbook_dir = web.config.handbook_dir
    files = dict(handbook_files(handbook_dir))
    if name not in files or handbook_dir is None:
        return web.render(request, "error.html", client=c, status=404, message="There is no such handbook page.")
    body = render_markdown((handbook_dir / name).read_text(encoding="utf-8"))
    return web.render(request, "handbook.html", client=c, name=name, body=body)
