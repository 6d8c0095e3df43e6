"""Listening sockets and a uvicorn server that leaves signals to its host process (the gateway,
the limiter service)."""
from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import uvicorn


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to its host process."""

    # Signals are handled once for both listeners in `serve`.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def parse_bind(text: str) -> tuple[str, int]:
    """HOST:PORT (PORT may be 0: pick a free one)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket with TCP_NODELAY (no delayed-ACK stall on streamed answers)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def sock_url(sock: socket.socket) -> str:
    """http://HOST:PORT of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
