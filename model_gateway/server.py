"""One gateway process: the proxy and the control API on two listeners, one event loop."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from .config import GatewayConfig, GatewaySecrets
from .control import create_control_app
from .listen import QuietServer, listen, parse_bind, sock_url
from .metering import UsageLog
from .prices import load_prices
from .proxy import GatewayState, ProxyApp


@dataclass(frozen=True)
class ServeOptions:
    """Everything `serve` needs."""

    config: GatewayConfig
    secrets: GatewaySecrets
    proxy_bind: str
    control_bind: str
    control_token: str
    usage_log_path: Path | None = None
    log_level: str = "warning"


def serve(opts: ServeOptions) -> int:
    """Run until SIGTERM/SIGINT or /control/shutdown; prints one ready line to stdout."""
    if len(opts.control_token) < 16:
        print(json.dumps({"event": "error", "detail": "control token too short (16+ characters)"}), flush=True)
        return 2
    prices = load_prices(Path(opts.config.prices) if opts.config.prices else None)
    state = GatewayState(config=opts.config, secrets=opts.secrets, prices=prices, usage_log=UsageLog(path=opts.usage_log_path))
    servers: list[QuietServer] = []

    def stop() -> None:
        for s in servers:
            s.should_exit = True

    p_sock = listen(*parse_bind(opts.proxy_bind))
    c_sock = listen(*parse_bind(opts.control_bind))
    # A client that uses the proxy's own address (not its name) is talking to it, not past it.
    state.own_hosts.add(sock_url(p_sock).removeprefix("http://").lower())
    # h11, not httptools: h11 hands the raw request target through, so an absolute-form target
    # is seen (and refused) instead of being quietly reduced to its path.
    common = dict(log_level=opts.log_level, access_log=False, lifespan="off", http="h11",
                  timeout_graceful_shutdown=5, timeout_keep_alive=75)
    servers.append(QuietServer(uvicorn.Config(ProxyApp(state), **common)))  # type: ignore[arg-type]
    servers.append(QuietServer(uvicorn.Config(create_control_app(state, opts.control_token, stop), **common)))  # type: ignore[arg-type]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop)
        tasks = [asyncio.create_task(servers[0].serve(sockets=[p_sock])),
                 asyncio.create_task(servers[1].serve(sockets=[c_sock]))]
        while not all(s.started for s in servers):
            if any(t.done() for t in tasks):
                break
            await asyncio.sleep(0.01)
        if all(s.started for s in servers):
            print(json.dumps({"event": "ready", "proxy": sock_url(p_sock), "control": sock_url(c_sock),
                              "pid": os.getpid(), "price_version": prices.version}), flush=True)
        try:
            await asyncio.gather(*tasks)
        finally:
            if state.client is not None:
                await state.client.aclose()

    asyncio.run(main())
    print(json.dumps({"event": "stopped"}), flush=True)
    return 0
