"""The campaign's limiter as an HTTP service, and the client every gateway consults it with.

One service per campaign, on the campaign's head (`orchestrator.model_limits` starts it): every
gateway of every attempt, on this host or a Ray node, asks it before each upstream call. It is
the one place the provider's limits are counted, so they hold across attempts and nodes.

| method, path | body | answer |
|---|---|---|
| POST /limiter/acquire | `{"provider", "attempt", "tokens"}` | held until there is room: `{"lease", "waited_s"}` |
| POST /limiter/release | `{"lease", "tokens"}` | `{"ok": true}` (tokens: what the provider reported, or null) |
| POST /limiter/throttled | `{"provider", "pause_s"}` | `{"ok": true}`: the provider said "not now" |
| GET /limiter/stats | | grants and queued seconds per attempt, per provider |
| GET /limiter/health | | `{"ok": true}` |

Every endpoint needs `Authorization: Bearer <limiter token>`. Only gateways hold the token (a
private file of the service, like the upstream key): an agent never reaches the limiter, and the
attempt a gateway names is its own (the gateway's config), never one the agent chooses.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import uvicorn
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from .limiter import Lease, Limiter
from .limits import ProviderLimits

_bearer = HTTPBearer(auto_error=False)


class LimiterUnavailable(RuntimeError):
    """The limiter service did not answer."""


class LimiterClient(Protocol):
    """What a gateway needs of a limiter, in its process or behind HTTP."""

    def declares(self, provider: str) -> bool: ...

    async def acquire(self, provider: str, attempt: str, tokens: int) -> Lease: ...

    async def release(self, lease: Lease, tokens_used: int | None) -> None: ...

    async def throttled(self, provider: str, pause_s: float) -> None: ...


class LocalLimiter:
    """A limiter inside the gateway's own process (a single attempt with declared limits)."""

    def __init__(self, limiter: Limiter) -> None:
        self.limiter = limiter

    def declares(self, provider: str) -> bool:
        return self.limiter.declares(provider)

    async def acquire(self, provider: str, attempt: str, tokens: int) -> Lease:
        return await self.limiter.acquire(provider, attempt, tokens)

    async def release(self, lease: Lease, tokens_used: int | None) -> None:
        self.limiter.release(lease, tokens_used)

    async def throttled(self, provider: str, pause_s: float) -> None:
        self.limiter.throttled(provider, pause_s)


class RemoteLimiter:
    """The campaign's limiter service, over HTTP."""

    def __init__(self, url: str, token: str, providers: tuple[str, ...]) -> None:
        self.url = url.rstrip("/")
        self.providers = providers
        self._headers = {"Authorization": f"Bearer {token}"}
        self._http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:  # made inside the running loop; no proxy from the environment
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None), trust_env=False)
        return self._http

    async def _post(self, path: str, doc: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = await self._client().post(self.url + path, json=doc, headers=self._headers)
            resp.raise_for_status()
            out = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise LimiterUnavailable(f"limiter {path}: {type(exc).__name__}: {exc}") from None
        return out if isinstance(out, dict) else {}

    def declares(self, provider: str) -> bool:
        return provider in self.providers

    async def acquire(self, provider: str, attempt: str, tokens: int) -> Lease:
        doc = await self._post("/limiter/acquire", {"provider": provider, "attempt": attempt, "tokens": tokens})
        return Lease(int(doc["lease"]), provider, attempt, tokens, 0.0, float(doc.get("waited_s") or 0.0))

    async def release(self, lease: Lease, tokens_used: int | None) -> None:
        await self._post("/limiter/release", {"lease": lease.id, "tokens": tokens_used})

    async def throttled(self, provider: str, pause_s: float) -> None:
        await self._post("/limiter/throttled", {"provider": provider, "pause_s": pause_s})

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


class _Acquire(BaseModel):
    provider: str = Field(min_length=1)
    attempt: str = Field(min_length=1)
    tokens: int = Field(default=0, ge=0)


class _Release(BaseModel):
    lease: int
    tokens: int | None = Field(default=None, ge=0)


class _Throttled(BaseModel):
    provider: str
    pause_s: float = Field(ge=0, le=3600)


class _Unauthorized(Exception):
    pass


def create_limiter_app(limiter: Limiter, token: str) -> FastAPI:
    """The limiter service's app over one `Limiter`."""
    app = FastAPI(title="provider limiter", openapi_url=None, docs_url=None, redoc_url=None)
    leases: dict[int, Lease] = {}

    def require_token(cred: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
        if cred is None or not hmac.compare_digest(cred.credentials.encode(), token.encode()):
            raise _Unauthorized()

    @app.exception_handler(_Unauthorized)
    async def _unauth(_request: Request, _exc: Exception) -> JSONResponse:
        return JSONResponse({"code": "unauthorized", "detail": "The limiter token is required."}, status_code=401)

    guard = [Depends(require_token)]

    @app.post("/limiter/acquire", dependencies=guard)
    async def acquire(body: _Acquire, request: Request) -> dict[str, Any]:
        task = asyncio.create_task(limiter.acquire(body.provider, body.attempt, body.tokens))
        while not task.done():
            # A gateway that went away (its call was abandoned) must not keep its place in line.
            await asyncio.wait({task}, timeout=1.0)
            if not task.done() and await request.is_disconnected():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                return {"lease": 0, "waited_s": 0.0}
        lease = task.result()
        leases[lease.id] = lease
        return {"lease": lease.id, "waited_s": round(lease.waited_s, 6)}

    @app.post("/limiter/release", dependencies=guard)
    def release(body: _Release) -> dict[str, Any]:
        lease = leases.pop(body.lease, None)
        if lease is not None:
            limiter.release(lease, body.tokens)
        return {"ok": True}

    @app.post("/limiter/throttled", dependencies=guard)
    def throttled(body: _Throttled) -> dict[str, Any]:
        limiter.throttled(body.provider, body.pause_s)
        return {"ok": True}

    @app.get("/limiter/stats", dependencies=guard)
    def stats() -> dict[str, Any]:
        return {"providers": limiter.stats()}

    @app.get("/limiter/health", dependencies=guard)
    def health() -> dict[str, Any]:
        return {"ok": True}

    return app


@dataclass
class LimiterService:
    """A limiter service running in a thread of this process (the campaign head's)."""

    url: str
    token: str
    providers: tuple[str, ...]
    _server: uvicorn.Server
    _thread: threading.Thread

    @classmethod
    def start(cls, limits: dict[str, ProviderLimits], token: str, *, host: str = "127.0.0.1",
              port: int = 0) -> LimiterService:
        """Listen on HOST:PORT (0: a free port) and serve until `stop()`."""
        from .listen import QuietServer, listen, sock_url

        sock = listen(host, port)
        app = create_limiter_app(Limiter(limits), token)
        # QuietServer: the campaign's own signal handlers stay in charge.
        server = QuietServer(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                            http="h11", timeout_keep_alive=75))
        thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])),
                                  name="provider-limiter", daemon=True)
        thread.start()
        service = cls(sock_url(sock), token, tuple(sorted(limits)), server, thread)
        for _ in range(3000):  # up to 30 s on a loaded machine
            if server.started:
                return service
            if not thread.is_alive():
                break
            threading.Event().wait(0.01)
        raise LimiterUnavailable("the limiter service did not start")

    def stats(self) -> dict[str, Any]:
        """The service's stats (GET /limiter/stats)."""
        resp = httpx.get(self.url + "/limiter/stats", headers={"Authorization": f"Bearer {self.token}"},
                         timeout=10, trust_env=False)
        resp.raise_for_status()
        out = resp.json()
        return out if isinstance(out, dict) else {}

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
