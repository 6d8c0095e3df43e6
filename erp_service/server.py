"""One bb-erp process: the agent API and the control API on two listeners, one event loop."""
from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from .faults import parse_fault_spec
from .http.app import create_app
from .http.control import create_control_app
from .http.fault_layer import FaultLayer, FaultLog
from .kernel.db import Database
from .kernel.identity import rekey_tokens
from .logs import configure_logging, get_logger
from .world import WorldError, load_world


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._wake = asyncio.Event()

    # Signals are handled once for both listeners in `serve`.
    @contextlib.contextmanager
    def capture_signals(self):
        yield

    def request_exit(self) -> None:
        """Stop serving (from the event loop: a signal handler or a request)."""
        self.should_exit = True
        self._wake.set()

    async def main_loop(self) -> None:
        # uvicorn's own loop wakes ten times a second to look at `should_exit`. An ERP waits
        # idle while its agent waits for a model, and one host runs dozens of them with two
        # servers each: this one wakes once a second (the Date header's resolution) or at
        # once when asked to stop.
        counter = 0
        while not await self.on_tick(counter):
            counter += 10  # a multiple of 10: every tick refreshes the Date header
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)


def parse_bind(text: str) -> tuple[str, int]:
    """HOST:PORT (PORT may be 0)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this. Without it uvicorn's two writes per response (head,
    # then body) meet the client's delayed ACK: ~40 ms added to every request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


@dataclass(frozen=True)
class ServeOptions:
    """Everything `serve` needs."""

    db: Path
    world: Path | None
    agent_bind: str
    control_bind: str
    control_token: str
    faults: str | None = None
    log_level: str = "warning"
    #: Token id -> secret, applied before the first request (kernel/identity.py rekey_tokens).
    token_secrets: dict[str, str] = field(default_factory=dict, repr=False)


log = get_logger(__name__)


def serve(opts: ServeOptions) -> int:
    """Run until SIGTERM/SIGINT or /control/shutdown; prints the ready line to stdout and logs
    JSON lines to stderr."""
    configure_logging(opts.log_level)
    if not opts.db.exists():
        print(json.dumps({"event": "error", "detail": f"database {opts.db} does not exist"}), flush=True)
        return 2
    if len(opts.control_token) < 16:
        print(json.dumps({"event": "error", "detail": "control token too short (16+ characters)"}), flush=True)
        return 2
    try:
        world = load_world(opts.world)
    except WorldError as exc:   # refuse to start: a misspelt section would silently change an actor
        print(json.dumps({"event": "error", "detail": f"bad world file: {exc}"}), flush=True)
        log.error("world_refused", world=str(opts.world), detail=str(exc))
        return 2
    plan = parse_fault_spec(opts.faults)
    db = Database(opts.db)
    if opts.token_secrets:
        try:
            with db.transaction() as conn:
                rekey_tokens(conn, opts.token_secrets)
        except ValueError as exc:
            print(json.dumps({"event": "error", "detail": f"bad token secrets: {exc}"}), flush=True)
            return 2
    fault_log = FaultLog()
    agent_app = create_app(db, world)
    app = FaultLayer(agent_app, plan, db, fault_log) if not plan.empty else agent_app

    servers: list[_Server] = []

    def stop() -> None:
        for s in servers:
            s.request_exit()

    control_app = create_control_app(db, world, opts.control_token, fault_log, stop)
    # What the start made (modules, models, routes) lives as long as the process: out of the
    # collector's sight from here (fewer, shorter collections per request); then back on.
    gc.freeze()
    gc.enable()
    a_sock = _listen(*parse_bind(opts.agent_bind))
    c_sock = _listen(*parse_bind(opts.control_bind))
    # log_config=None: uvicorn leaves logging to `configure_logging` (JSON lines on stderr).
    common: dict[str, Any] = dict(log_level=opts.log_level, access_log=False, lifespan="off",
                                  timeout_graceful_shutdown=5, log_config=None)
    servers.append(_Server(uvicorn.Config(app, **common)))
    servers.append(_Server(uvicorn.Config(control_app, **common)))

    def url(sock: socket.socket) -> str:
        host, port = sock.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop)
        tasks = [asyncio.create_task(servers[0].serve(sockets=[a_sock])),
                 asyncio.create_task(servers[1].serve(sockets=[c_sock]))]
        while not all(s.started for s in servers):
            if any(t.done() for t in tasks):
                break
            await asyncio.sleep(0.01)
        if all(s.started for s in servers):
            print(json.dumps({"event": "ready", "agent": url(a_sock), "control": url(c_sock),
                              "pid": os.getpid(), "faults": plan.text() or None}), flush=True)
            log.info("serving", agent=url(a_sock), control=url(c_sock), db=str(opts.db),
                     world_sections=sorted(world.data), faults=plan.text() or None,
                     business_date=db.business_date())
        await asyncio.gather(*tasks)

    try:
        asyncio.run(main())
    finally:
        db.close()
    log.info("shutdown_complete", db=str(opts.db))
    print(json.dumps({"event": "stopped"}), flush=True)
    return 0
