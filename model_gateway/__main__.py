"""`python -m model_gateway serve|fake-provider`.

    serve --config FILE --secrets-file FILE --proxy-bind HOST:PORT --control-bind HOST:PORT
          --control-token-file FILE [--usage-log FILE] [--prices FILE]
    fake-provider --script FILE --bind HOST:PORT [--record FILE] [--rate-limit-rpm N]

Both print one JSON line `{"event": "ready", ...}` when listening (PORT 0 picks a free port).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _fake(args: argparse.Namespace) -> int:
    import asyncio

    import uvicorn

    from .fake_provider import Recorder, create_fake_app
    from .fake_script import load_script
    from .server import listen, parse_bind, sock_url

    try:
        script = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(json.dumps({"event": "error", "detail": f"bad script: {exc}"}), flush=True)
        return 2
    app = create_fake_app(script, Recorder(args.record), rate_limit_rpm=args.rate_limit_rpm)
    sock = listen(*parse_bind(args.bind))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", http="h11"))

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            print(json.dumps({"event": "ready", "url": sock_url(sock), "pid": os.getpid()}), flush=True)
        await task

    asyncio.run(main())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="model_gateway", description="the model gateway of an attempt")
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the proxy and the control API")
    s.add_argument("--config", required=True, type=Path)
    s.add_argument("--secrets-file", required=True, type=Path)
    s.add_argument("--proxy-bind", default="127.0.0.1:0")
    s.add_argument("--control-bind", default="127.0.0.1:0")
    s.add_argument("--control-token-file", type=Path, help="file holding the control token (else env PB_GATEWAY_CONTROL_TOKEN)")
    s.add_argument("--usage-log", type=Path, help="also append usage-log rows to this JSONL file")
    s.add_argument("--prices", type=Path, help="the price table (overrides the config's; default: the packaged one)")
    s.add_argument("--log-level", default="warning")
    f = sub.add_parser("fake-provider", help="serve a scripted fake provider (tests)")
    f.add_argument("--script", required=True, type=Path)
    f.add_argument("--bind", default="127.0.0.1:0")
    f.add_argument("--record", type=Path)
    f.add_argument("--rate-limit-rpm", type=int, help="answer 429 beyond this many model calls a minute")
    args = parser.parse_args(argv)
    if args.cmd == "fake-provider":
        return _fake(args)

    from .config import ConfigError, load_config, load_secrets
    from .server import ServeOptions, serve

    try:
        config = load_config(args.config)
        secrets = load_secrets(args.secrets_file)
        if args.prices is not None:
            config = config.model_copy(update={"prices": str(args.prices)})
    except ConfigError as exc:
        print(json.dumps({"event": "error", "detail": str(exc)}), flush=True)
        return 2
    if args.control_token_file:
        token = args.control_token_file.read_text().strip()
    else:
        token = os.environ.pop("PB_GATEWAY_CONTROL_TOKEN", "")
    if not token:
        print(json.dumps({"event": "error", "detail": "no control token"}), flush=True)
        return 2
    return serve(ServeOptions(config=config, secrets=secrets, proxy_bind=args.proxy_bind,
                              control_bind=args.control_bind, control_token=token, usage_log_path=args.usage_log,
                              log_level=args.log_level))


if __name__ == "__main__":
    sys.exit(main())
