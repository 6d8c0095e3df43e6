"""`orchestrate review LABEL`: walk a person through every failed check of a label and record a
decision on each, `agent_wrong` or `task_wrong`, with a note (orchestrator/review/). For each
failed check it shows the check's detail and cited clauses, the agent's projection beside the
reference, the audit rows behind a breach, and where the transcript is; decisions go to the
label's append-only `reviews.jsonl` (who and when), and `orchestrate report` summarises them.

    orchestrate review L [--by NAME]                          # walk every undecided failed check
    orchestrate review L --list                               # the decisions per check
    orchestrate review L --attempt ID --check NAME --decision task_wrong --note "..." [--by NAME]

Exit status (docs/exit-codes.md): 0 done, 2 no such label, or a decision that cannot be recorded.
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

CHOICES = {"a": "agent_wrong", "t": "task_wrong"}
MAX_ROWS = 12


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `review` subcommand."""
    p = sub.add_parser("review", help="record agent_wrong / task_wrong decisions on a label's failed checks")
    p.add_argument("label", help="campaign label (a folder under the runs root)")
    p.add_argument("--by", help="who is reviewing (default: $USER)")
    p.add_argument("--list", action="store_true", help="print the decisions per check and stop")
    p.add_argument("--attempt", help="with --decision: the attempt id")
    p.add_argument("--check", help="with --decision: the check's name")
    p.add_argument("--decision", choices=("agent_wrong", "task_wrong"), help="record one decision without walking")
    p.add_argument("--note", help="with --decision: why")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.set_defaults(func=run)


def _csv(path: Path) -> list[list[str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        return list(csv.reader(fh))


def _projections(folder: Path) -> list[tuple[str, list[list[str]], list[list[str]]]]:
    """(name, agent rows, reference rows) of every projection whose two copies differ."""
    out = []
    for agent in sorted((folder / "projections").glob("*.csv")):
        if agent.name.endswith(".reference.csv"):
            continue
        ref = agent.with_name(agent.stem + ".reference.csv")
        a, r = _csv(agent), _csv(ref)
        if a != r:
            out.append((agent.stem, a, r))
    return out


def _audit_rows(folder: Path, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The audit rows the attempt's breaches point at."""
    from orchestrator.report.attempt_page import audit_ids

    ids = {i for b in result.get("breaches") or [] if isinstance(b, dict) for i in audit_ids(b.get("refs"))}
    path = folder / "audit.jsonl"
    if not ids or not path.is_file():
        return []
    rows = [json.loads(t) for t in path.read_text().splitlines() if t.strip()]
    return [r for r in rows if r.get("id") in ids]


def show(console: Any, item: Any) -> None:
    """Print one failed check with what a reviewer needs beside it."""
    from rich.table import Table

    console.rule(f"{item.cell} seed {item.seed} rep {item.rep}: {item.check}")
    console.print(f"type {item.type}{' (breach)' if item.breach else ''}; cites {', '.join(item.cites) or '-'}",
                  highlight=False)
    console.print(f"detail: {item.detail}", highlight=False)
    folder = item.folder
    result = json.loads((folder / "result.json").read_text()) if folder and (folder / "result.json").is_file() else {}
    pairs = _projections(folder) if folder else []
    for name, agent, ref in pairs:
        for title, rows in ((f"agent: {name}", agent), (f"reference: {name}", ref)):
            table = Table(title=title)
            for col in (rows[0] if rows else ["(empty)"]):
                table.add_column(col)
            for row in rows[1:MAX_ROWS + 1]:
                table.add_row(*row)
            console.print(table)
    behind: list[dict[str, Any]] = _audit_rows(folder, result) if folder and item.breach else []
    for audit_row in behind:
        console.print(f"audit {audit_row.get('id')}: {audit_row.get('method')} {audit_row.get('path')} -> {audit_row.get('status')} "
                      f"by {audit_row.get('actor')}", highlight=False)
    transcript = [p for p in (folder / "trajectory.json", folder / "turns") if folder and p.exists()]
    if transcript:
        console.print("transcript: " + ", ".join(str(p) for p in transcript), highlight=False)


def run(args: argparse.Namespace) -> int:
    """Record decisions (walking, or one from the flags), or list them."""
    from rich.console import Console

    from orchestrator.commands.export import default_runs_root
    from orchestrator.exit_codes import ExitCode
    from orchestrator.review.decisions import (
        ReviewError,
        failed_checks,
        latest,
        read_decisions,
        record_decision,
        review_summary,
    )

    runs_root = (args.runs_root or default_runs_root()).resolve()
    root = runs_root / args.label
    if not root.is_dir():
        raise ReviewError(f"no campaign {args.label!r} under {runs_root}")
    console = Console()
    if args.decision:
        if not (args.attempt and args.check and args.note):
            raise ReviewError("--decision needs --attempt, --check and --note")
        entry = record_decision(runs_root, args.label, attempt_id=args.attempt, check=args.check,
                                decision=args.decision, note=args.note, reviewer=args.by)
        console.print(f"recorded {entry.decision} on {entry.attempt_id} / {entry.check} by {entry.reviewer}", highlight=False)
        return ExitCode.OK
    failed = failed_checks(runs_root, args.label)
    if not args.list:
        decided = latest(read_decisions(root))
        for item in [f for f in failed if (f.attempt_id, f.check) not in decided]:
            show(console, item)
            answer = input("decision: [a]gent_wrong, [t]ask_wrong, [s]kip, [q]uit? ").strip().lower()[:1]
            if answer == "q":
                break
            if answer not in CHOICES:
                continue
            note = input("note (why): ").strip()
            entry = record_decision(runs_root, args.label, attempt_id=item.attempt_id, check=item.check,
                                    decision=CHOICES[answer], note=note, reviewer=args.by)
            console.print(f"recorded {entry.decision}", highlight=False)
    summary = review_summary(failed, read_decisions(root))
    for name, counts in summary["checks"].items():
        console.print(f"{name}: {counts['failed']} failed, {counts['agent_wrong']} agent_wrong, "
                      f"{counts['task_wrong']} task_wrong, {counts['undecided']} undecided", highlight=False)
    return ExitCode.OK
