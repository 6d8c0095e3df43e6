"""`orchestrate review LABEL`: a person's review of every failed check of a campaign label.

    orchestrate review LABEL                      walk through the unreviewed failed checks (prompts)
    orchestrate review LABEL --all                ... every failed check, decided or not
    orchestrate review LABEL --list               the failed checks and the decision in force
    orchestrate review LABEL --attempt A          one attempt's material, no prompt
    orchestrate review LABEL --attempt A --check C --decision task_wrong --kind alternative --note "..."
                                                  record one decision without a prompt
    orchestrate review LABEL --serve [--port N]   the report in a browser, with a form beside each
                                                  failed check (loopback only; Ctrl-C stops it)

Decisions go to `runs/<label>/reviews.jsonl` (append-only; orchestrator/review/decisions.py);
`orchestrate report LABEL` shows them. Exit status (docs/exit-codes.md): 0 done, 2 bad input (no
such label, an unknown attempt or check, a check that passed, an unknown decision or kind; nothing
is written). Never needs the container engine. `--serve` answers a refused decision in the page
(400, nothing written) and keeps serving (orchestrator/review/serve.py).
"""
from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `review` subcommand."""
    p = sub.add_parser("review", help="review a label's failed checks: agent_wrong or task_wrong, with a note")
    p.add_argument("label", help="campaign label (a folder under the runs root)")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.add_argument("--list", action="store_true", help="list the failed checks and their decisions; no prompt")
    p.add_argument("--all", action="store_true", help="walk through decided checks too")
    p.add_argument("--attempt", help="an attempt id or its folder under the label (<cell>/seed-<n>/rep-<k>)")
    p.add_argument("--check", help="with --decision: the failed check decided on")
    p.add_argument("--decision", help="agent_wrong or task_wrong (records one decision, no prompt)")
    p.add_argument("--kind", help="with task_wrong: alternative, handbook_gap or task_bug")
    p.add_argument("--note", default="", help="why (required with task_wrong)")
    p.add_argument("--reviewer", "--by", dest="reviewer", help="who decides (default: $USER)")
    p.add_argument("--serve", action="store_true",
                   help="serve the report on loopback with a decision form beside each failed check")
    p.add_argument("--host", default="127.0.0.1", help="with --serve: a loopback address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="with --serve: the port (default: a free one)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """List, show, walk or record; a ReviewError ends the command as bad_input with nothing written."""
    from rich.console import Console

    from orchestrator.commands.export import default_runs_root
    from orchestrator.exit_codes import ExitCode
    from orchestrator.review.decisions import ReviewError, append, find_line, new_decision, read, read_ledger
    from orchestrator.review.material import gather
    from orchestrator.review.terminal import listing, show_attempt, walk

    root = (args.runs_root or default_runs_root()).resolve() / args.label
    if not root.is_dir():
        raise ReviewError(f"no campaign {args.label!r} under {root.parent}")
    lines = read_ledger(root)
    decisions = read(root)
    console = Console(highlight=False)
    if args.serve:
        return _serve(args, root, console)
    if args.decision or args.check:
        if not (args.attempt and args.check and args.decision):
            raise ReviewError("recording a decision needs --attempt, --check and --decision together")
        decision = new_decision(lines, args.attempt, args.check, args.decision, args.kind, args.note, args.reviewer)
        append(root, decision)
        print(f"recorded {decision.label} on {decision.attempt_id} {decision.check} by {decision.who} at "
              f"{decision.when}; `orchestrate report {args.label}` shows it")
        return ExitCode.OK
    if args.list:
        listing(console, lines, decisions)
        return ExitCode.OK
    if args.attempt:
        line = find_line(lines, args.attempt)
        if line is None:
            raise ReviewError(f"unknown attempt {args.attempt!r}: not in the label's ledger")
        show_attempt(console, gather(root, line, decisions), with_transcript=True)
        return ExitCode.OK
    walk(console, root, lines, decisions, who=args.reviewer, everything=args.all)
    return ExitCode.OK


def _serve(args: argparse.Namespace, root: Path, console: object) -> int:
    """Serve the report with the decision forms until Ctrl-C."""
    from orchestrator.exit_codes import ExitCode
    from orchestrator.review.decisions import ReviewError, default_reviewer
    from orchestrator.review.serve import ReviewSite, check_host, serve

    if args.decision or args.check or args.list or args.attempt:
        raise ReviewError("--serve takes no --decision, --check, --list or --attempt: decide in the browser")
    check_host(args.host)
    site = ReviewSite(root.parent, root.name, reviewer=args.reviewer or default_reviewer())

    def ready(url: str) -> None:
        print(f"review {root.name}: open {url} (decisions go to {root / 'reviews.jsonl'}; Ctrl-C stops)", flush=True)

    serve(site, host=args.host, port=args.port, ready=ready)
    return ExitCode.OK
