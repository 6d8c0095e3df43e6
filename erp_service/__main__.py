"""`python -m erp_service serve|canonical-hash` — see docs/contracts.md §1."""
from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="erp_service", description="bb-erp")
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the agent API and the control API")
    s.add_argument("--db", required=True, type=Path)
    s.add_argument("--world", type=Path)
    s.add_argument("--agent-bind", default="127.0.0.1:0")
    s.add_argument("--control-bind", default="127.0.0.1:0")
    s.add_argument("--control-token-file", type=Path,
                   help="file holding the control token (else env BBERP_CONTROL_TOKEN)")
    s.add_argument("--faults", default=None, help="fault spec (§7.1); empty = none")
    s.add_argument("--token-secrets", type=Path, default=None,
                   help="JSON file {token id: secret}: those tokens get these secrets before the first request")
    s.add_argument("--log-level", default="warning")
    h = sub.add_parser("canonical-hash", help="print the canonical SHA-256 of a database")
    h.add_argument("--db", required=True, type=Path)
    w = sub.add_parser("standby", help="import the server, then wait for a file holding `serve`'s arguments "
                                       "(a warm start: the runtime prepares the process before its attempt exists)")
    w.add_argument("--launch", required=True, type=Path,
                   help="a JSON list of `serve` arguments; read once it appears and parses")
    w.add_argument("--poll-s", type=float, default=0.02)
    args = parser.parse_args(argv)

    if args.cmd == "canonical-hash":
        from .canonical import canonical_hash
        print(canonical_hash(args.db))
        return 0
    if args.cmd == "standby":
        return standby(args.launch, args.poll_s)

    # The cyclic collector does nothing useful while the app is imported and built (the objects
    # made live as long as the process) but costs ~15% of the start's CPU; `serve` freezes what
    # the start made and turns it back on (server.serve).
    gc.disable()
    # Optional integrations of the libraries that nothing the ERP serves uses, each imported only
    # because it is installed (the image has them for erp_mcp): structlog's rich console renderer
    # (the ERP logs JSON lines) and fastapi's e-mail validation of OpenAPI contact fields (none
    # set). Marked absent, as if not installed: ~0.07 s less CPU at every start.
    for optional in ("rich", "email_validator"):
        sys.modules.setdefault(optional, None)  # type: ignore[arg-type]
    from .faults import FaultSpecError
    from .server import ServeOptions, serve
    if args.control_token_file:
        token = args.control_token_file.read_text().strip()
    else:
        token = os.environ.pop("BBERP_CONTROL_TOKEN", "")
    if not token:
        print(json.dumps({"event": "error", "detail": "no control token"}), flush=True)
        return 2
    token_secrets: dict[str, str] = {}
    if args.token_secrets:
        try:
            token_secrets = json.loads(args.token_secrets.read_text())
        except (OSError, ValueError) as exc:
            print(json.dumps({"event": "error", "detail": f"unreadable token secrets: {exc}"}), flush=True)
            return 2
        if not isinstance(token_secrets, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in token_secrets.items()):
            print(json.dumps({"event": "error", "detail": "token secrets must be a JSON object of strings"}), flush=True)
            return 2
    try:
        return serve(ServeOptions(db=args.db, world=args.world, agent_bind=args.agent_bind,
                                  control_bind=args.control_bind, control_token=token, faults=args.faults,
                                  log_level=args.log_level, token_secrets=token_secrets))
    except FaultSpecError as exc:
        print(json.dumps({"event": "error", "detail": f"bad fault spec: {exc}"}), flush=True)
        return 2


def standby(launch: Path, poll_s: float) -> int:
    """Import what `serve` imports, say so, and wait for `launch`: a JSON list of arguments
    starting with ``serve``, which then runs in this process. The import is most of a start's
    time (seconds on a loaded host); done ahead, the attempt that takes this process pays only
    for opening its database. The file is written after the files it names (the runtime copies
    them first); one that does not parse yet is read again."""
    gc.disable()
    for optional in ("rich", "email_validator"):
        sys.modules.setdefault(optional, None)  # type: ignore[arg-type]
    import time

    from . import domains, server, sim  # noqa: F401 — imported ahead: the point of standing by

    print(json.dumps({"event": "standby", "pid": os.getpid()}), flush=True)
    while True:
        try:
            argv = json.loads(launch.read_text())
        except (OSError, ValueError):
            time.sleep(poll_s)
            continue
        if not (isinstance(argv, list) and argv[:1] == ["serve"] and all(isinstance(a, str) for a in argv)):
            print(json.dumps({"event": "error", "detail": "the launch file is not a list of serve arguments"}),
                  flush=True)
            return 2
        return main(argv)


def exit_now(code: int) -> None:
    """End the process once `main` returned: output flushed, no interpreter teardown.

    Everything the ERP keeps is written before `serve` returns (the database closed, the stopped
    line printed); tearing down the interpreter's modules afterwards took 1-1.5 s of a loaded
    host's CPU at every attempt's end, during which the runtime's graceful stop waited."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1  # the host did not get what was written: say so
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
