"""The terminal front end of the failure review (rich): the listing, one attempt's material, and
the walk that asks for a decision on each failed check.

Every decision is appended to the label's file the moment it is given, so quitting (`q`, end of
input, Ctrl-C) loses nothing that was answered.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table

from orchestrator.review.decisions import (
    AGENT_WRONG,
    KINDS,
    TASK_WRONG,
    Decision,
    append,
    attempt_folder,
    failed_attempts,
    failed_checks,
    latest,
    new_decision,
)
from orchestrator.review.material import AttemptMaterial, CheckMaterial, gather

AUDIT_COLUMNS = ("id", "business_date", "actor", "method", "path", "action", "outcome", "status", "error_code")
MAX_TRANSCRIPT_STEPS = 60


def decision_text(d: Decision | None) -> str:
    """`unreviewed`, or the decision with its reviewer and time."""
    return "unreviewed" if d is None else f"{d.label} by {d.who} at {d.when}"


def listing(console: Console, lines: list[dict[str, Any]], decisions: list[Decision]) -> int:
    """Print every failed check of every failed attempt with the decision in force; return how many
    are unreviewed."""
    now = latest(decisions)
    unreviewed = 0
    for ln in failed_attempts(lines):
        # One line per attempt and per check, never folded, so ids can be copied (and grepped) whole.
        console.print(f"[b]{escape(str(ln['attempt_id']))}[/b]  {escape(attempt_folder(ln))}", soft_wrap=True)
        for c in failed_checks(ln):
            d = now.get((str(ln["attempt_id"]), str(c.get("name"))))
            unreviewed += d is None
            console.print(f"    {escape(str(c.get('name')))}  ({escape(str(c.get('type')))}{', breach' if c.get('breach') else ''})"
                          f"  {escape(decision_text(d))}", soft_wrap=True)
    console.print(f"{unreviewed} failed check(s) unreviewed")
    return unreviewed


def _rows_table(title: str, rows: list[list[str]], marked: set[tuple[str, ...]]) -> Table:
    table = Table(title=title, title_justify="left")
    for h in (rows[0] if rows else ["(empty)"]):
        table.add_column(escape(h))
    for r in rows[1:]:
        table.add_row(*(escape(v) for v in r), style="red" if tuple(r) in marked else None)
    return table


def _check_panel(item: CheckMaterial) -> Panel:
    c = item.check
    parts: list[Any] = [
        f"[b]{escape(item.name)}[/b] ({escape(str(c.get('type')))}; "
        f"{'required' if c.get('required', True) else 'optional'}{'; BREACH' if c.get('breach') else ''})",
        escape(str(c.get("detail") or "")),
    ]
    for f in (c.get("findings") or [])[:10]:
        parts.append("• " + escape(str(f.get("message") if isinstance(f, dict) else f)))
    for cid, text in item.clauses:
        parts.append(f"[b]{escape(cid)}[/b] {escape(text) or '[dim](clause text not in this checkout)[/dim]'}")
    if not item.clauses:
        parts.append("[dim]cites no handbook clause[/dim]")
    if item.projection:
        only_agent, only_ref = item.differing()
        parts.append(f"projection [b]{escape(item.projection)}[/b]: rows in red are in one table and not the other")
        parts.append(_rows_table("agent", item.agent_rows, only_agent))
        parts.append(_rows_table("reference", item.reference_rows, only_ref))
    for b in item.breaches:
        parts.append(f"[red]breach[/red] {escape(str(b.get('rule')))}: {escape(str(b.get('message') or ''))}")
    if item.audit_rows:
        table = Table(title="audit rows behind the breach", title_justify="left")
        for col in (*AUDIT_COLUMNS, "request"):
            table.add_column(col)
        for r in item.audit_rows:
            req = r.get("request")
            req_text = req if isinstance(req, str) else json.dumps(req, sort_keys=True)
            table.add_row(*(escape("" if r.get(k) is None else str(r.get(k))) for k in AUDIT_COLUMNS),
                          escape((req_text or "")[:200]))
        parts.append(table)
    parts.append(f"decision: {escape(decision_text(item.decision))}"
                 + (f" — {escape(item.decision.note)}" if item.decision and item.decision.note else ""))
    return Panel(Group(*parts), title="failed check", title_align="left")


def show_attempt(console: Console, material: AttemptMaterial, *, with_transcript: bool = False) -> None:
    """Print one failed attempt: identity, each failed check's material, and (asked for) the transcript."""
    ident = material.line.get("identity") or {}
    console.rule(f"{escape(str(ident.get('cell') or material.where))} · seed {ident.get('seed')} · rep {ident.get('rep')}")
    console.print(f"attempt {escape(material.attempt_id)} ({escape(material.where)}), task {escape(str(ident.get('task')))} "
                  f"version {escape(str(ident.get('task_version')))}, outcome {escape(str(material.line.get('outcome')))}",
                  soft_wrap=True)
    for item in material.checks:
        console.print(_check_panel(item))
    if material.transcript is None:
        console.print("[dim]no trajectory.json: no transcript for this attempt[/dim]")
    elif with_transcript:
        show_transcript(console, material)
    else:
        console.print(f"transcript: {len(material.transcript)} step(s) (answer x to read it)")


def show_transcript(console: Console, material: AttemptMaterial) -> None:
    """Print the attempt's transcript, one line per step (the last steps when it is long)."""
    steps = material.transcript or []
    console.print(f"[b]transcript[/b]: {len(steps)} step(s) of trajectory.json")
    if len(steps) > MAX_TRANSCRIPT_STEPS:
        console.print(f"[dim]({len(steps) - MAX_TRANSCRIPT_STEPS} earlier step(s) not shown)[/dim]")
    for n, text in list(enumerate(steps, 1))[-MAX_TRANSCRIPT_STEPS:]:
        console.print(f"{n:>4} {escape(text)}")


def _ask_decision(console: Console, lines: list[dict[str, Any]], material: AttemptMaterial, item: CheckMaterial,
                  who: str | None) -> Decision | str | None:
    """Ask for one check's decision: a Decision, "skip", "quit", or None to ask again."""
    answer = Prompt.ask(f"[b]{escape(item.name)}[/b]: " + escape("[a]gent_wrong, [t]ask_wrong, [s]kip, transcript [x], [q]uit"),
                        choices=["a", "t", "s", "x", "q"], console=console)
    if answer == "q":
        return "quit"
    if answer == "s":
        return "skip"
    if answer == "x":
        show_transcript(console, material) if material.transcript is not None else console.print("no transcript")
        return None
    kind = None
    if answer == "t":
        kind = Prompt.ask("kind", choices=list(KINDS), console=console)
    note = Prompt.ask("note" + (" (required)" if answer == "t" else ""), default="", console=console)
    while answer == "t" and not note.strip():
        note = Prompt.ask("note (required: what the task should accept or say, and why)", default="", console=console)
    return new_decision(lines, material.attempt_id, item.name, AGENT_WRONG if answer == "a" else TASK_WRONG,
                        kind, note, who)


def walk(console: Console, root: Path, lines: list[dict[str, Any]], decisions: list[Decision], *,
         who: str | None, everything: bool = False) -> int:
    """Walk through the failed checks (only the unreviewed ones unless `everything`), recording each
    answer at once; return the number of decisions recorded."""
    recorded = 0
    now = latest(decisions)
    for ln in failed_attempts(lines):
        pending = [c for c in failed_checks(ln) if everything or (str(ln["attempt_id"]), str(c.get("name"))) not in now]
        if not pending:
            continue
        material = gather(root, ln, decisions)
        show_attempt(console, material)
        for item in material.checks:
            if item.name not in {str(c.get("name")) for c in pending}:
                continue
            try:
                answer: Decision | str | None = None
                while answer is None:
                    answer = _ask_decision(console, lines, material, item, who)
            except (EOFError, KeyboardInterrupt):
                console.print(f"\nstopped; {recorded} decision(s) recorded in this session")
                return recorded
            if answer == "quit":
                console.print(f"{recorded} decision(s) recorded in this session")
                return recorded
            if isinstance(answer, Decision):
                append(root, answer)
                recorded += 1
                console.print(f"recorded: {escape(answer.label)}")
    console.print(f"no failed check left to review; {recorded} decision(s) recorded in this session")
    return recorded
