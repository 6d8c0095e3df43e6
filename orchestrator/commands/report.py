"""`orchestrate report LABEL`: write a self-contained HTML report of a campaign."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `report` subcommand."""
    p = sub.add_parser("report", help="write runs/<label>/report.html (inline SVG charts, no external assets)")
    p.add_argument("label", help="campaign label")
    p.add_argument("--out", type=Path, help="output file (default runs/<label>/report.html)")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report; exit 2 when the label has no exported summary."""
    from orchestrator.commands.export import default_runs_root
    from orchestrator.exit_codes import ExitCode
    from orchestrator.report.label_page import write_report

    runs_root = (args.runs_root or default_runs_root()).resolve()
    try:
        path = write_report(runs_root, args.label, args.out)
    except FileNotFoundError as exc:
        print(f"orchestrate report: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(path)
    return ExitCode.OK
