"""The agent app's route class: a plain-``def`` endpoint runs on the event loop when the database
is free, instead of in FastAPI's thread pool.

Every domain endpoint is a plain ``def`` that does its work through the pipeline, which holds the
database's one lock for all of it. FastAPI sends such an endpoint to its thread pool: a worker is
woken, the event loop sleeps until the worker wakes it again — two thread hand-overs per request,
each waiting for the scheduler on a loaded machine (a bare async route pays neither). Nothing is
gained by the hop: the work is serialised by the database lock anyway, and the endpoint never
awaits. So `InlineRoute` wraps such an endpoint in a coroutine that takes the database lock
*without waiting* and runs the endpoint right there; when the lock is held (the control API or
a worker thread is using the database), it hops to the thread pool as before, so the event loop
never blocks on the lock.

The wrapper carries the endpoint's name, docstring, module and signature (``functools.wraps``;
FastAPI reads parameters, annotations and their module through ``__wrapped__``), so the route's
parameters, responses and OpenAPI document are the endpoint's own. Generator endpoints (streamed
responses) are left as they are.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from .api import Api


def _lock_of(arguments: dict[str, Any]) -> Any:
    """The database lock of the request's `Api` argument, or None (the route has none)."""
    for value in arguments.values():
        if isinstance(value, Api):
            return value.db.lock
    return None


def on_loop(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """`endpoint` (a plain function) as a coroutine function that runs it on the calling thread
    when its request's database lock is free at once, else in the thread pool."""

    @functools.wraps(endpoint)
    async def run(**arguments: Any) -> Any:
        lock = _lock_of(arguments)
        if lock is not None and lock.acquire(blocking=False):
            try:   # the pipeline takes the same (re-entrant) lock again: it is ours already
                return endpoint(**arguments)
            finally:
                lock.release()
        return await run_in_threadpool(endpoint, **arguments)

    run.runs_on_loop = True  # type: ignore[attr-defined]
    return run


def _plain_function(endpoint: Any) -> bool:
    return (inspect.isfunction(endpoint) and not inspect.iscoroutinefunction(endpoint)
            and not inspect.isgeneratorfunction(endpoint) and not inspect.isasyncgenfunction(endpoint))


class InlineRoute(APIRoute):
    """`APIRoute` whose plain-function endpoint is wrapped by `on_loop`."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, on_loop(endpoint) if _plain_function(endpoint) else endpoint, **kwargs)

