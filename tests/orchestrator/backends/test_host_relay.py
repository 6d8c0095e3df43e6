"""The relay to a model server on the host's loopback (orchestrator/backends/docker/host_relay.py),
on real sockets of this host's loopback: 127.0.0.2 stands for the gateway (the one peer
admitted), 127.0.0.1 for anyone else. The firewall side is proven in containers
(tests/escape/test_escape_host_model.py)."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from orchestrator.backends.docker.host_relay import HostRelay

GATEWAY = "127.0.0.2"


class Target:
    """A TCP server on 127.0.0.1 that records each connection's bytes and answers with `reply`,
    in `chunks` pieces, then holds the connection open unless `close_after`."""

    def __init__(self, reply: bytes = b"", chunks: int = 1, close_after: bool = True) -> None:
        self.reply, self.chunks, self.close_after = reply, chunks, close_after
        self.accepted: list[str] = []
        self.received: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, addr = self.sock.accept()
            except OSError:
                return
            self.accepted.append(addr[0])
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        data = conn.recv(65536)
        self.received.append(data)
        step = max(1, len(self.reply) // self.chunks)
        for i in range(0, len(self.reply), step):
            conn.sendall(self.reply[i:i + step])
            time.sleep(0.01)
        if self.close_after:
            conn.close()
        else:
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def relay() -> Iterator[list[HostRelay]]:
    made: list[HostRelay] = []
    yield made
    for r in made:
        r.close()


def connect_from(source: str, address: tuple[str, int]) -> socket.socket:
    sock = socket.socket()
    sock.settimeout(10)
    sock.bind((source, 0))
    sock.connect(address)
    return sock


def read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def test_the_admitted_peer_is_forwarded_both_ways_streams_included(relay) -> None:
    reply = b"HTTP/1.1 200 OK\r\n\r\n" + b"data: chunk\n\n" * 50
    target = Target(reply, chunks=10)
    r = HostRelay("127.0.0.1", ("127.0.0.1", target.port), frozenset({GATEWAY}), name="t")
    relay.append(r)
    r.start()
    sock = connect_from(GATEWAY, r.address)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_all(sock) == reply
    sock.close()
    assert target.received == [b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n"]
    assert r.counts.forwarded == 1 and r.counts.refused == 0
    target.close()


def test_another_peer_is_refused_and_the_target_sees_nothing(relay) -> None:
    target = Target(b"secret")
    r = HostRelay("127.0.0.1", ("127.0.0.1", target.port), frozenset({GATEWAY}), name="t")
    relay.append(r)
    r.start()
    intruder = connect_from("127.0.0.1", r.address)
    intruder.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert read_all(intruder) == b""  # closed at once, nothing forwarded
    intruder.close()
    # Positive control: the admitted peer, same relay, same moment, gets the answer.
    sock = connect_from(GATEWAY, r.address)
    sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert read_all(sock) == b"secret"
    sock.close()
    assert target.accepted == ["127.0.0.1"]  # the relay's own connection for the admitted peer only
    assert (r.counts.forwarded, r.counts.refused, r.counts.refused_peers) == (1, 1, ["127.0.0.1"])
    target.close()


def test_bound_is_not_listening_until_started(relay) -> None:
    """The port is known before anything is accepted: the firewall rules go in between."""
    target = Target(b"x")
    r = HostRelay("127.0.0.1", ("127.0.0.1", target.port), frozenset({GATEWAY}), name="t")
    relay.append(r)
    port = r.bind()
    assert port > 0 and r.address == ("127.0.0.1", port)
    with pytest.raises(ConnectionRefusedError):
        connect_from(GATEWAY, ("127.0.0.1", port))
    r.start()
    sock = connect_from(GATEWAY, ("127.0.0.1", port))
    sock.sendall(b"hi")
    assert read_all(sock) == b"x"
    sock.close()
    target.close()


def test_close_cuts_open_streams_and_frees_the_port(relay) -> None:
    target = Target(b"first event\n", close_after=False)  # a stream that never ends by itself
    r = HostRelay("127.0.0.1", ("127.0.0.1", target.port), frozenset({GATEWAY}), name="cut")
    relay.append(r)
    r.start()
    address = r.address
    sock = connect_from(GATEWAY, address)
    sock.sendall(b"GET /stream HTTP/1.1\r\n\r\n")
    assert sock.recv(100) == b"first event\n"
    started = time.monotonic()
    counts = r.close()
    assert read_all(sock) == b""  # the open stream is cut, not left hanging
    assert time.monotonic() - started < 5
    sock.close()
    assert counts.forwarded == 1
    with pytest.raises(ConnectionRefusedError):
        connect_from(GATEWAY, address)
    deadline = time.monotonic() + 5
    while any(t.name.startswith("cut-") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("cut-")]
    target.close()


def test_a_target_that_is_down_closes_the_client(relay) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]  # nothing listens here once closed
    r = HostRelay("127.0.0.1", ("127.0.0.1", free), frozenset({GATEWAY}), name="t")
    relay.append(r)
    r.start()
    sock = connect_from(GATEWAY, r.address)
    sock.sendall(b"POST / HTTP/1.1\r\n\r\n")
    assert read_all(sock) == b""
    sock.close()
    deadline = time.monotonic() + 5
    while r.counts.failed == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (r.counts.forwarded, r.counts.failed) == (0, 1)


def test_an_ipv6_loopback_target_is_forwarded(relay) -> None:
    """`http://[::1]:PORT` declares a server on the IPv6 loopback: the relay (on IPv4, the
    bridge's side) forwards to it."""
    try:
        srv = socket.socket(socket.AF_INET6)
        srv.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this host")
    srv.listen(1)

    def answer() -> None:
        conn, _ = srv.accept()
        conn.recv(100)
        conn.sendall(b"v6 here")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    r = HostRelay("127.0.0.1", ("::1", srv.getsockname()[1]), frozenset({GATEWAY}), name="t")
    relay.append(r)
    r.start()
    sock = connect_from(GATEWAY, r.address)
    sock.sendall(b"hi")
    assert read_all(sock) == b"v6 here"
    sock.close()
    srv.close()
