"""A fake model provider for tests and benchmarks: plays a scripted conversation, records
everything it receives.

    python -m model_gateway fake-provider --script FILE --bind HOST:PORT [--record FILE]

Speaks Anthropic Messages (+ count_tokens), OpenAI Responses and Chat Completions, streaming
included. Each request is recorded (method, path, query, headers, body, the step it took and the
usage it reported) to memory and, with `--record`, as a JSON line. `GET /_fake/requests` returns
the records. It is the upstream of the gateway in tests; it never joins an attempt network.

`--rate-limit-rpm N` makes it a rate-limited provider: beyond N model calls in any 60 s it
answers 429 (`rate_limit_error` / `rate_limit_exceeded`, with `Retry-After`: the seconds until the
window has room), as a real account does; `/_fake/health` counts those refusals.
"""
from __future__ import annotations

import asyncio
import json
import math
import secrets
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import fake_script as fs


class Recorder:
    """What the fake received, in order."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.items: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, item: dict[str, Any]) -> None:
        with self._lock:
            item["seq"] = len(self.items) + 1
            self.items.append(item)
            if self.path is not None:
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(item, sort_keys=True) + "\n")


def _key(request: Request) -> str | None:
    if request.headers.get("x-api-key"):
        return request.headers["x-api-key"]
    auth = request.headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else None


def _takes_step(script: fs.Script, body: dict[str, Any]) -> bool:
    return script.match == "any" or bool(body.get("tools"))


class RateWindow:
    """At most `per_minute` calls in any 60 s; the calls beyond it are refused and counted."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.times: deque[float] = deque()
        self.refused = 0
        self._lock = threading.Lock()

    def admit(self) -> float | None:
        """None when the call is within the rate; else the seconds until the window has room."""
        with self._lock:
            now = time.monotonic()
            while self.times and self.times[0] <= now - 60.0:
                self.times.popleft()
            if len(self.times) < self.per_minute:
                self.times.append(now)
                return None
            self.refused += 1
            return self.times[0] + 60.0 - now


def create_fake_app(script: fs.Script, recorder: Recorder | None = None, *,
                    rate_limit_rpm: int | None = None) -> FastAPI:
    """The fake provider's app for one script (rate-limited beyond `rate_limit_rpm`, if given)."""
    app = FastAPI(title="fake provider", openapi_url=None, docs_url=None, redoc_url=None)
    rec = recorder or Recorder()
    window = RateWindow(rate_limit_rpm) if rate_limit_rpm else None
    cursor = {"next": 0}
    lock = threading.Lock()
    # Ids are unique per fake process, as a real provider's are unique everywhere: a response id
    # of one attempt's upstream is never one of another's (the gateway's previous_response_id rule).
    instance = secrets.token_hex(4)

    def pick(body: dict[str, Any]) -> tuple[int | None, fs.Step]:
        with lock:
            if _takes_step(script, body) and cursor["next"] < len(script.steps):
                index = cursor["next"]
                cursor["next"] += 1
                return index, script.steps[index]
        return None, script.otherwise

    async def answer(request: Request, api: str) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        item: dict[str, Any] = {"method": request.method, "path": request.url.path, "query": request.url.query,
                                "headers": dict(request.headers), "body": body, "api": api}
        if script.require_key is not None and _key(request) != script.require_key:
            item.update(step=None, status=401, usage=None)
            rec.add(item)
            return JSONResponse({"type": "error", "error": {"type": "authentication_error",
                                                            "message": "invalid x-api-key"}}, status_code=401)
        if api == "count_tokens":
            item.update(step=None, status=200, usage=None)
            rec.add(item)
            return JSONResponse({"input_tokens": max(1, len(raw) // 4)})
        wait = window.admit() if window is not None else None
        if wait is not None:
            item.update(step=None, status=429, usage=None, rate_limited=True)
            rec.add(item)
            message = f"rate limit of {window.per_minute} requests per minute exceeded"  # type: ignore[union-attr]
            doc = ({"error": {"message": message, "type": "requests", "code": "rate_limit_exceeded"}}
                   if api != "messages" else {"type": "error", "error": {"type": "rate_limit_error", "message": message}})
            return JSONResponse(doc, status_code=429, headers={"retry-after": str(max(1, math.ceil(wait)))})
        index, step = pick(body if isinstance(body, dict) else {})
        model = script.model or str(body.get("model") or "fake")
        ident = f"fake{instance}n{len(rec.items) + 1}"
        if step.delay_s:
            await asyncio.sleep(step.delay_s)
        if step.fail is not None:
            status = int(step.fail["status"])
            item.update(step=index, status=status, usage=None)
            rec.add(item)
            kind = step.fail.get("type", "api_error")
            message = step.fail.get("message", "scripted failure")
            doc = ({"error": {"message": message, "type": kind, "code": kind}} if api != "messages"
                   else {"type": "error", "error": {"type": kind, "message": message}})
            retry_after = step.fail.get("retry_after")  # a scripted "not now" may say when to come back
            extra = {"retry-after": str(retry_after)} if retry_after is not None else None
            return JSONResponse(doc, status_code=status, headers=extra)
        item.update(step=index, status=200, usage=dict(step.usage))
        rec.add(item)
        stream = body.get("stream") is True
        if not stream:
            if api == "messages":
                return JSONResponse(fs.anthropic_message(step, model, ident))
            if api == "responses":
                return JSONResponse(fs.responses_body(step, model, ident))
            return JSONResponse(fs.chat_body(step, model, ident))
        if api == "messages":
            events = fs.anthropic_events(step, model, ident)
        elif api == "responses":
            events = fs.responses_events(step, model, ident)
        else:
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            events = fs.chat_events(step, model, ident, include)

        async def play() -> AsyncIterator[bytes]:
            for n, event in enumerate(events):
                if n and step.chunk_delay_s:
                    await asyncio.sleep(step.chunk_delay_s)
                yield event

        return StreamingResponse(play(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "request-id": f"req_{ident}"})

    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        return await answer(request, "messages")

    @app.post("/v1/messages/count_tokens")
    async def count_tokens(request: Request) -> Response:
        return await answer(request, "count_tokens")

    @app.post("/v1/responses")
    async def responses(request: Request) -> Response:
        return await answer(request, "responses")

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await answer(request, "chat")

    @app.get("/_fake/requests")
    def requests() -> dict[str, Any]:
        return {"items": rec.items}

    @app.get("/_fake/health")
    def health() -> dict[str, Any]:
        return {"ok": True, "steps": len(script.steps), "next": cursor["next"],
                "rate_limited": window.refused if window is not None else 0}

    return app
