"""The ERP's uvicorn servers wake once a second while idle (uvicorn's own loop: ten times), and a
stop request ends their loop at once rather than at the next wake."""
from __future__ import annotations

import asyncio
import time

import uvicorn

from erp_service.server import _Server


async def _app(scope, receive, send):  # never called: the loop is run without a listener
    raise AssertionError("no request expected")


def test_the_idle_loop_ticks_once_a_second_and_stops_at_once():
    server = _Server(uvicorn.Config(_app, lifespan="off", log_config=None))
    ticks: list[int] = []
    original = server.on_tick

    async def counting_tick(counter: int) -> bool:
        ticks.append(counter)
        return await original(counter)

    server.on_tick = counting_tick  # type: ignore[method-assign]

    async def scenario() -> float:
        # on_tick reads the state uvicorn's startup would have made.
        server.server_state.default_headers = []
        loop_task = asyncio.create_task(server.main_loop())
        await asyncio.sleep(2.5)
        stop_at = time.monotonic()
        server.request_exit()
        await asyncio.wait_for(loop_task, 0.5)
        return time.monotonic() - stop_at

    stop_took = asyncio.run(scenario())
    assert 2 <= len(ticks) <= 4, ticks   # uvicorn's own loop: about 25 in 2.5 s
    assert all(t % 10 == 0 for t in ticks)  # each tick refreshes the Date header
    assert stop_took < 0.5
