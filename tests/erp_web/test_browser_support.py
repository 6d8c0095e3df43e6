"""The shared browser helper: a headless chromium renders a loopback page and screenshots it at the fixed size."""

from __future__ import annotations

import http.server
import struct
import threading
from pathlib import Path

from browser import WINDOW, browser_session, screenshot


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = b"<html><body style='background:#fff'><h1 id='t'>hello browser</h1></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_headless_chromium_screenshots_a_loopback_page(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with browser_session() as driver:
            driver.get(f"http://127.0.0.1:{server.server_address[1]}/")
            assert driver.find_element("id", "t").text == "hello browser"
            shot = screenshot(driver, tmp_path / "shots", "hello")
            data = shot.read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
            width, height = struct.unpack(">II", data[16:24])
            assert width == WINDOW[0]
            assert height <= WINDOW[1]
    finally:
        server.shutdown()
