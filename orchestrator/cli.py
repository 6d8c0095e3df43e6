"""`orchestrate`: the host-side command line.

Each subcommand lives in its own module under `orchestrator/commands/` and exposes
`register(subparsers)`; the module sets `func` on its parser. Adding a command never touches
this file beyond the list below.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import traceback

from orchestrator.exit_codes import Failure, failure_for

# Modules under orchestrator.commands, in the order `--help` lists them.
COMMAND_MODULES = [
    "images",
    "attempt",
    "campaign",
    "validate",
    "export",
    "regrade",
    "review",
    "report",
    "publish",
    "reap",
    "handbook",
    "debug",
    "human",
    "declare",
    "scenario",
]


def build_parser() -> argparse.ArgumentParser:
    """Build the parser from every command module that is present."""
    parser = argparse.ArgumentParser(prog="orchestrate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"orchestrator.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"orchestrator.commands.{name}":
                continue  # not built yet
            raise
        module.register(sub)
    return parser


def command_name(args: argparse.Namespace) -> str:
    """`attempt`, `images build`, ...: the name messages start with."""
    parts = [args.command]
    if getattr(args, "images_command", None):
        parts.append(args.images_command)
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `orchestrate` script; returns the process exit code.

    A command returns its own code for what it found (docs/exit-codes.md); any exception that
    escapes it is turned into its failure class, one line on stderr and that class's code, so
    no expected failure (a dead engine, a broken pack) prints a traceback or exits 1.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    # A process started as a background job of a script (`orchestrate attempt ... &`) inherits
    # SIGINT ignored, and Python then installs no KeyboardInterrupt handler: a SIGINT sent to stop
    # it did nothing (the attempt ran on). SIGINT is this tool's documented stop, so it always is.
    if argv is None and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return int(args.func(args) or 0)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 — the one place exceptions become exit codes
        ending = failure_for(exc)
        if os.environ.get("PB_TRACEBACK") and ending.failure is not Failure.INTERRUPTED:
            traceback.print_exc()
        print(f"orchestrate {command_name(args)}: {ending.failure.value}: {ending.message}", file=sys.stderr)
        return ending.code


if __name__ == "__main__":
    sys.exit(main())
