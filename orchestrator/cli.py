"""`orchestrate`: the host-side command line.

Each subcommand lives in its own module under `orchestrator/commands/` and exposes
`register(subparsers)`; the module sets `func` on its parser. Adding a command never touches
this file beyond the list below.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules under orchestrator.commands, in the order `--help` lists them.
COMMAND_MODULES = [
    "images",
    "attempt",
    "campaign",
    "validate",
    "export",
    "report",
    "reap",
    "handbook",
    "debug",
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `orchestrate` script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
