"""`python -m erp_web serve --api URL --bind HOST:PORT [...]`: the web UI as a process.

Prints one JSON ready line `{"event": "ready", "web": "http://HOST:PORT", "pid": N}` once it
listens (the runtime's service convention), then serves until SIGTERM.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path

from erp_web.config import WebConfig


def _read(path: str | None) -> str | None:
    return Path(path).read_text(encoding="utf-8").strip() if path else None


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, bind, print the ready line, serve."""
    p = argparse.ArgumentParser(prog="python -m erp_web")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the web UI")
    s.add_argument("--api", required=True, help="the agent API's base URL")
    s.add_argument("--bind", default="127.0.0.1:0", help="HOST:PORT to listen on (port 0: any free port)")
    s.add_argument("--token-file", help="the signed-in user's token (human mode); else a sign-in page")
    s.add_argument("--login-key-file", help="the secret of the sign-in link /login?key=...")
    s.add_argument("--host-token-file", help="the host's token for /_turn (human mode)")
    s.add_argument("--handbook", help="the handbook folder (Markdown files)")
    s.add_argument("--human", action="store_true", help="turns worked by a person: usable only during a turn")
    args = p.parse_args(argv)
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit():
        print(json.dumps({"event": "error", "detail": f"--bind {args.bind!r}: expected HOST:PORT"}), flush=True)
        return 2
    config = WebConfig(api_url=args.api, token=_read(args.token_file), login_key=_read(args.login_key_file),
                       host_token=_read(args.host_token_file), handbook_dir=Path(args.handbook) if args.handbook else None,
                       human=args.human)
    import uvicorn

    from erp_web.app import create_app

    app = create_app(config)  # before the ready line: a broken app never reports ready
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(128)
    bound = sock.getsockname()
    print(json.dumps({"event": "ready", "web": f"http://{bound[0]}:{bound[1]}", "pid": os.getpid()}), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
