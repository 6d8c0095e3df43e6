"""`orchestrate handbook render|check|lint [TASK…]`: the handbook registry tool.

    render   write tasks/<slug>/handbook/*.md from clauses.yaml
    check    the committed handbook is byte-identical to the rendered one
    lint     cited clauses exist, audit checks run rules their cited clauses bind, parameters,
             placement; lists the clauses no check enforces (report-only)

No TASK means every task with a clauses.yaml. Exit status (docs/exit-codes.md): 1 if check or
lint finds a problem, 2 for an unknown task.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `handbook` subcommand."""
    p = sub.add_parser("handbook", help="render, check or lint task handbooks", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["render", "check", "lint"])
    p.add_argument("tasks", nargs="*", metavar="TASK")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orchestrator.exit_codes import ExitCode
    from orchestrator.grading.rules import known_rules
    from tasks import handbook
    from tasks.packs import PackError
    from tasks.registry import list_tasks, load_task

    slugs = args.tasks or [s for s in list_tasks() if (Path(load_task(s).dir) / "clauses.yaml").exists()]
    unknown = [s for s in slugs if s not in list_tasks()]
    if unknown:
        print(f"orchestrate handbook: bad_input: no such task(s) {', '.join(unknown)} "
              f"(known: {', '.join(list_tasks()) or 'none'})", file=sys.stderr)
        return ExitCode.BAD_INPUT
    bad = 0
    for slug in slugs:
        try:
            if args.action == "render":
                for p in handbook.write(slug):
                    print(f"wrote {p}")
            elif args.action == "check":
                probs = handbook.check(slug)
                for pr in probs:
                    print(f"✗ {pr}")
                bad += len(probs)
                if not probs:
                    print(f"✓ {slug}: handbook matches clauses.yaml")
            else:
                rep = handbook.lint(slug, known_rules())
                for e in rep.errors:
                    print(f"✗ {e}")
                for n in rep.notes:
                    print(f"  note: {n}")
                bad += len(rep.errors)
                if rep.ok:
                    print(f"✓ {slug}: lint clean")
        except PackError as exc:
            print(f"✗ {exc}", file=sys.stderr)
            bad += 1
    return ExitCode.NEGATIVE if bad else ExitCode.OK
