"""`orchestrate regrade LABEL --as NEW_LABEL`: grade every attempt of LABEL again, from what it
retained, with this checkout's task versions and grader, into the new label NEW_LABEL (marked as a
rescoring; LABEL is only read). Prints what flipped, per cell and check; the new label's
delta.json, summary, report and `export --verify` are like any label's (orchestrator/regrade/).

`orchestrate regrade BUNDLE_DIR --as NEW_LABEL` does the same from a publication bundle (a folder
holding bundle.json): it is verified on its own, graded from what it ships, and only read.

Exit status (docs/exit-codes.md): 0 rescored, 2 no such label or bundle, a source that does not
verify, or a NEW_LABEL that exists.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `regrade` subcommand."""
    p = sub.add_parser("regrade", help="grade a label's attempts again into a new label, with a delta report")
    p.add_argument("label", help="the label to rescore, or a publication bundle's folder (only read)")
    p.add_argument("--as", dest="target", required=True, metavar="NEW_LABEL", help="the new label to write")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Rescore one label and print the delta."""
    from rich.console import Console
    from rich.table import Table

    from orchestrator.commands.export import default_runs_root
    from orchestrator.exit_codes import ExitCode
    from orchestrator.regrade.rescore import regrade_label

    runs_root = (args.runs_root or default_runs_root()).resolve()
    done = regrade_label(runs_root, args.label, args.target)
    console = Console()
    table = Table(title=f"rescoring {done.source} -> {done.target}")
    for col in ("cell", "check", "change", "seed/rep"):
        table.add_column(col)
    for cell, entry in done.delta.get("cells", {}).items():
        for check, kinds in entry.get("checks", {}).items():
            for kind, items in kinds.items():
                for item in items:
                    table.add_row(cell, check, kind.replace("_", " "), f"{item['seed']}/{item['rep']}")
    console.print(table)
    console.print(f"{done.regraded} re-graded, {done.delta.get('flipped_attempts', 0)} verdicts flipped; "
                  f"{len(done.copied)} unscored copied as they were; {len(done.not_regradable)} not re-gradable; "
                  f"{done.missing} planned without a result\nlabel: {runs_root / done.target} (delta.json, summary.json)",
                  highlight=False)
    for item in done.not_regradable:
        console.print(f"not re-gradable: {item['attempt_id']}: {item['reason']}", highlight=False)
    return ExitCode.OK
