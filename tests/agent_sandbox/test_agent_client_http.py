"""Client and `erp` behaviour on answers bb-erp itself never gives but a proxy or a crash can:
an HTML 502 page, a dropped connection. Served by a small real HTTP server in a thread."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_sandbox.client import ErpClient, ErpError, ErpUnreachable


class Script:
    """What the server does for each request, in order: 'html502', 'drop', or 'ok'."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.seen: list[tuple[str, str, str | None, bytes]] = []


def make_handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            script.seen.append((self.command, self.path, self.headers.get("Idempotency-Key"), body))
            step = script.steps.pop(0) if script.steps else "ok"
            if step == "drop":
                self.close_connection = True
                self.connection.shutdown(2)  # no answer at all
                return
            if step == "html502":
                raw = b"<html><body>502 Bad Gateway</body></html>"
                self.send_response(502)
                self.send_header("Content-Type", "text/html")
            else:
                raw = json.dumps({"business_date": "2026-10-08", "data": {"ok": True}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _serve

    return Handler


@pytest.fixture()
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(script))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_html_502_becomes_an_http_error_problem(server: tuple[str, Script]) -> None:
    url, script = server
    script.steps = ["html502"]
    with ErpClient(url, "tok", max_attempts=1) as client, pytest.raises(ErpError) as info:
        client.get("/whoami")
    assert info.value.status == 502 and info.value.code == "http_error" and "Bad Gateway" in info.value.detail
    script.steps = ["html502"]
    env = {"PATH": os.environ.get("PATH", ""), "ERP_URL": url, "ERP_TOKEN": "tok"}
    proc = subprocess.run([sys.executable, "-m", "agent_sandbox.erp_cli", "whoami"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {"status": 502, "code": "http_error", "detail": "<html><body>502 Bad Gateway</body></html>"}


def test_reads_and_keyed_writes_are_retried_after_502_and_dropped_connections(server: tuple[str, Script]) -> None:
    url, script = server
    with ErpClient(url, "tok", backoff_s=0.01) as client:
        script.steps = ["html502", "drop"]
        assert client.get("/whoami") == {"ok": True}
        assert client.stats.requests == 3
        script.seen.clear()
        script.steps = ["drop", "html502"]
        assert client.post("/calls", {"party_id": "V-1"}, key="k-t1-w1") == {"ok": True}
        # Every send carried the same key and byte-identical body.
        assert {(m, p, k, b) for m, p, k, b in script.seen} == {("POST", "/calls", "k-t1-w1", b'{"party_id":"V-1"}')}
        assert len(script.seen) == 3
        script.seen.clear()
        script.steps = ["drop"]
        with pytest.raises(ErpUnreachable):
            client.post("/calls", {"party_id": "V-1"})
        assert len(script.seen) == 1  # keyless: never re-sent


def test_bounded_attempts(server: tuple[str, Script]) -> None:
    url, script = server
    script.steps = ["html502"] * 10
    with ErpClient(url, "tok", max_attempts=3, backoff_s=0.01) as client, pytest.raises(ErpError):
        client.get("/whoami")
    assert len(script.seen) == 3
