"""`orchestrate reap`: remove containers, networks and volumes whose owner process is gone.

Every engine object of an attempt carries the owner's pid, start time, boot id and host name
(see orchestrator/labels.py). By default an object is removed only when its owner is provably
dead (same host: no such process, or another start time, or another boot). `--all-dead` also
removes objects whose owner cannot be checked from here (another host sharing the engine, or
owner labels missing). Objects of a live owner are never removed.

Exit status (docs/exit-codes.md): 0 done, 3 engine unavailable or an object could not be removed.
"""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `reap` subcommand."""
    p = sub.add_parser("reap", help="remove engine objects left by dead orchestrators", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--all-dead", action="store_true",
                   help="also remove objects whose owner cannot be checked from this host")
    p.add_argument("--campaign", help="only objects of this campaign label")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Reap; a dead engine is one line and exit 3 (orchestrator.cli maps the exception)."""
    import docker

    from orchestrator.backends.docker.reaper import reap
    from orchestrator.exit_codes import ExitCode, check_engine

    check_engine()
    client = docker.from_env(timeout=120)
    report = reap(client, all_dead=args.all_dead, campaign=args.campaign, dry_run=args.dry_run)
    for line in report.removed:
        print(f"removed  {line}")
    for line in report.failed:
        print(f"FAILED   {line}")
    print(report.summary())
    return ExitCode.INFRA if report.failed else ExitCode.OK
