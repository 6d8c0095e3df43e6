"""How `ErpClient` sends one request: the `Transport` interface, and `HttpTransport`, its
implementation over the standard library's `http.client`.

The `erp` command is a process per call, and agents call it dozens of times a turn: the HTTP
library it imports is paid at every call. `http.client` costs about a third of what an `httpx`
import did (CPU per `erp` call: ~55 ms against ~170 ms in the agent image), and the client needs
nothing more than one keep-alive connection, timeouts and clear failures. Another transport
(MCP tool calls: mcp_client.py) implements the same two methods.
"""
from __future__ import annotations

import abc
import http.client
import select
import socket
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit


class Headers(Mapping[str, str]):
    """Response headers, looked up without regard to case (repeated headers joined by ", ")."""

    def __init__(self, items: Iterable[tuple[str, str]] | Mapping[str, str] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        self._by_key: dict[str, tuple[str, str]] = {}
        for name, value in pairs:
            key = name.lower()
            if key in self._by_key:
                value = f"{self._by_key[key][1]}, {value}"
            self._by_key[key] = (name, value)

    def __getitem__(self, name: str) -> str:
        return self._by_key[name.lower()][1]

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"


@dataclass(frozen=True)
class Request:
    """One request as the client built it: its bytes do not change between retries."""

    method: str
    path: str  # starts with "/", no query
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None

    @property
    def target(self) -> str:
        """The request target: path and encoded query."""
        return f"{self.path}?{urlencode(self.query)}" if self.query else self.path


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, undecoded."""

    status: int
    headers: Headers
    content: bytes


class TransportError(Exception):
    """No answer: the connection failed, dropped, or the answer did not come in time."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        self.reason, self.timed_out = reason, timed_out
        super().__init__(reason)


class Transport(abc.ABC):
    """Sends requests to one service."""

    @abc.abstractmethod
    def send(self, request: Request, timeout_s: float) -> Answer:
        """The service's answer to `request`. Raises `TransportError` when there is none."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the transport holds (connections, sessions)."""


class HttpTransport(Transport):
    """HTTP/1.1 to `base_url` over one keep-alive connection (`http.client`)."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"ERP url must be http(s)://host[:port][/prefix], got {base_url!r}")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self, timeout_s: float) -> http.client.HTTPConnection:
        conn = self._conn
        if conn is not None and conn.sock is not None and _readable(conn.sock):
            # The server closed the idle connection (or sent something unasked): a request sent
            # on it would fail after being written, and a write could not tell whether it
            # arrived. A fresh connection instead.
            conn.close()
            conn = None
        if conn is None:
            kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = self._conn = kind(self.host, self.port, timeout=timeout_s)
        conn.timeout = timeout_s
        if conn.sock is not None:
            conn.sock.settimeout(timeout_s)
        return conn

    def send(self, request: Request, timeout_s: float) -> Answer:
        conn = self._connection(timeout_s)
        if conn.sock is None:
            try:
                conn.connect()
            except OSError as exc:  # refused, unreachable, no such name, timed out
                self.close()
                raise TransportError(f"cannot connect ({exc})" if str(exc) else "cannot connect",
                                     timed_out=isinstance(exc, TimeoutError)) from exc
        try:
            conn.request(request.method, self.prefix + request.target, body=request.content,
                         headers=request.headers)
            response = conn.getresponse()
            content = response.read()
        except TimeoutError as exc:
            self.close()
            raise TransportError(f"no answer within {timeout_s:g} s ({type(exc).__name__})", timed_out=True) from exc
        except (http.client.HTTPException, OSError) as exc:
            # RemoteDisconnected, IncompleteRead, a reset or a broken pipe: the request may have
            # arrived, its answer did not.
            self.close()
            raise TransportError(f"connection dropped before an answer ({type(exc).__name__}: {exc})") from exc
        if response.will_close:
            self.close()
        return Answer(response.status, Headers(response.getheaders()), content)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection has something to read: for a keep-alive connection between
    requests, that is its end."""
    try:
        ready, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(ready)
