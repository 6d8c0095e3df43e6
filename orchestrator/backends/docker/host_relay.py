"""A relay on the host for a model server the user runs on the host's loopback (issue 31, item 5).

Why a relay: a server listening on 127.0.0.1 of the host cannot be reached from any container
(a container's 127.0.0.1 is its own), and every host address is closed to the egress network by
the bridge's INPUT rules (firewall.py). So the orchestrator opens exactly one door for one
attempt: this relay listens on the egress bridge's host address and one port the kernel picks,
accepts connections from the attempt's gateway address only, and forwards each to the one
declared loopback address and port (a literal address: no name is resolved, so nothing can be
rebound). `HostFirewall.open_port` admits that source to that address and port and drops every
other packet to it (firewall.py); this relay refuses any other peer as well, so each guard holds
alone.

It runs as threads of the orchestrator process that runs the attempt, so it ends with that
process: a crash leaves no relay behind (its firewall rules carry the network's tag and go with
the network, or with `orchestrate reap`). The sandbox closes it at teardown (`close`), which also
cuts the connections still open (a stream the gateway still reads).
"""
from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from dataclasses import dataclass, field
from typing import Any

from orchestrator.backends.docker.firewall import HostFirewall
from orchestrator.errors import InfraError, Phase
from orchestrator.logs import get_logger

log = get_logger(__name__)

CONNECT_TIMEOUT_S = 10.0
CHUNK = 65536
POLL_S = 0.5  # how soon `close` is noticed by the accept loop (no CPU is used between polls)


@dataclass
class RelayCounts:
    """What the relay did: connections forwarded, refused (another peer), failed (target down)."""

    forwarded: int = 0
    refused: int = 0
    failed: int = 0
    refused_peers: list[str] = field(default_factory=list)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = False
    block_on_close = False

    relay: HostRelay


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.server.relay._forward(self.request)


class HostRelay:
    """Forwards TCP connections from `allowed` peers on (`listen_ip`, a free port) to `target`.

    Usage: `relay = HostRelay(...)`; `port = relay.bind()` (the socket is bound, not yet
    listening: install the firewall rules for the port now); `relay.start()`; ...; `relay.close()`.
    """

    def __init__(self, listen_ip: str, target: tuple[str, int], allowed: frozenset[str], *, name: str = "relay"):
        self.listen_ip = listen_ip
        self.target = target
        self.allowed = allowed
        self.name = name
        self.counts = RelayCounts()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def address(self) -> tuple[str, int]:
        """(listen address, port); the port is known once bound."""
        if self._server is None:
            raise RuntimeError("the relay is not bound")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def bind(self) -> int:
        """Bind the listening socket (port chosen by the kernel) without accepting yet; the port."""
        server = _Server((self.listen_ip, 0), _Handler, bind_and_activate=False)
        server.relay = self
        try:
            server.server_bind()
        except OSError:
            server.server_close()
            raise
        self._server = server
        return self.address[1]

    def start(self) -> None:
        """Listen and serve in a daemon thread."""
        if self._server is None:
            self.bind()
        assert self._server is not None
        self._server.server_activate()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": POLL_S},
                                        name=f"{self.name}-accept", daemon=True)
        self._thread.start()

    def _track(self, *socks: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._open.update(socks)
            return True

    def _forward(self, client: socket.socket) -> None:
        peer = client.getpeername()[0]
        if peer not in self.allowed:
            with self._lock:
                self.counts.refused += 1
                self.counts.refused_peers.append(peer)
            return  # socketserver closes the client socket
        try:
            upstream = socket.create_connection(self.target, timeout=CONNECT_TIMEOUT_S)
        except OSError:
            with self._lock:
                self.counts.failed += 1
            return
        upstream.settimeout(None)
        client.settimeout(None)
        if not self._track(client, upstream):
            upstream.close()
            return
        with self._lock:
            self.counts.forwarded += 1
        back = threading.Thread(target=_pump, args=(upstream, client), name=f"{self.name}-back", daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        with self._lock:
            self._open.discard(client)
            self._open.discard(upstream)
        upstream.close()

    def close(self) -> RelayCounts:
        """Stop accepting, cut every open connection, free the port; what the relay did."""
        with self._lock:
            self._closed = True
            live = list(self._open)
        if self._server is not None:
            if self._thread is not None:
                self._server.shutdown()  # returns once the accept loop has stopped
                self._thread.join(timeout=5)
            self._server.server_close()
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return self.counts

    def describe(self) -> dict[str, Any]:
        """For logs: where it listens, whom it admits, where it forwards, what it did."""
        listen = self.address if self._server is not None else (self.listen_ip, None)
        return {"listen": f"{listen[0]}:{listen[1]}", "target": f"{self.target[0]}:{self.target[1]}",
                "allowed": sorted(self.allowed), "forwarded": self.counts.forwarded,
                "refused": self.counts.refused, "failed": self.counts.failed}


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes from `src` to `dst` until `src` ends; then end `dst`'s sending side."""
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


@dataclass
class HostDoor:
    """One opened door: the relay and its firewall opening (both closed by `close`)."""

    relay: HostRelay
    wall: HostFirewall
    source: str

    def close(self) -> list[str]:
        """Close the relay, then delete its rules; return problems."""
        self.relay.close()
        listen, port = self.relay.address
        problems = self.wall.close_port(self.source, listen, port)
        log.info("host_door_closed", **self.relay.describe())
        return problems


def open_host_door(wall: HostFirewall, listen_ip: str, source: str, target: tuple[str, int], *,
                   name: str) -> HostDoor:
    """A relay on `listen_ip` (the bridge's host address) from `source` only to `target`, with
    its firewall opening installed before it accepts anything. Raises InfraError (FirewallError
    for the rules); nothing is left open on failure."""
    relay = HostRelay(listen_ip, target, frozenset({source}), name=name)
    try:
        port = relay.bind()
    except OSError as exc:
        raise InfraError(f"cannot open a relay on {listen_ip} for the host's {target[0]}:{target[1]}: {exc}",
                         phase=Phase.SERVICES) from exc
    try:
        wall.open_port(source, listen_ip, port)
    except BaseException:
        relay.close()
        raise
    relay.start()
    log.info("host_door_opened", **relay.describe())
    return HostDoor(relay, wall, source)
