"""The web UI: a FastAPI app of server-rendered pages over the agent API.

Every page asks the ERP with the signed-in user's token; every write form posts to `/act/<action
code>`, which sends exactly one API request (`routes/actions.py`). The app holds one `WebState`
(`deps.py`: settings, templates, sessions, the turn board, the ERP's API index) and includes one
router per area (`routes/`).
"""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from erp_web.config import WebConfig
from erp_web.deps import HERE, Redirect, WebState
from erp_web.routes import ROUTERS


def create_app(config: WebConfig) -> FastAPI:
    """The app for one ERP (and, in human mode, one person's attempt)."""
    app = FastAPI(title=config.title, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.web = WebState(config)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.exception_handler(Redirect)
    async def _redirect(_request: Request, exc: Redirect) -> Response:
        return RedirectResponse(exc.url, status_code=303)

    for router in ROUTERS:
        app.include_router(router)
    return app
