"""Printing a validation report (orchestrator/validate.py): the matrix per task and condition
(task × control × seed), the disclosure tallies, the notes, one line per pack, the problems and
the run's figures (wall time, attempts per minute)."""
from __future__ import annotations

from typing import Any

from orchestrator.cells import CLEAN
from orchestrator.validate import Entry, Report


def print_report(rep: Report, console=None) -> None:
    """The matrix (task × control × seed) and the list of problems, with rich."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    for slug, cond in [(t, c) for t in rep.tasks for c in rep.conditions]:
        rows: dict[str, dict[Any, Entry]] = {}
        for e in rep.entries:
            if e.task == slug and e.condition == cond:
                rows.setdefault(e.control, {})[e.seed] = e
        if not rows:
            continue
        table = Table(title=f"{slug} ({cond})", show_lines=False)
        table.add_column("control")
        cols: list[Any] = [None] + list(rep.seeds)
        for s in cols:
            table.add_column("task" if s is None else f"seed {s}", justify="center")
        for control, by_seed in rows.items():
            cells = []
            for s in cols:
                found = by_seed.get(s)
                cells.append("" if found is None else ("[green]ok[/]" if found.ok else "[bold red]FAIL[/]"))
            table.add_row(control, *cells)
        console.print(table)
    if rep.disclosure:
        console.print("disclosure probe (every restricted class, oracle final databases):")
        for slug, tally in rep.disclosure.items():
            style = "red" if tally.findings else "green"
            console.print(Text(f"  {slug}: ", style=style) + Text(tally.summary()), highlight=False)
    for note in rep.notes:
        console.print(Text(f"note: {note}", style="dim"), highlight=False)
    # One line per pack, so the end of a long run's log says where each stands.
    for slug in rep.tasks:
        mine = [e for e in rep.entries if e.task == slug]
        if mine:
            bad = [e for e in mine if not e.ok]
            mark, style = ("✗", "red") if bad else ("✓", "green")
            lost = sum(e.infra for e in bad)
            console.print(Text(f"{mark} {slug}: {len(mine)} entries, {len(bad)} problem(s)"
                               + (f" ({lost} lost to the infrastructure)" if lost else ""), style=style), highlight=False)
    if rep.problems:
        console.print(f"[bold red]{len(rep.problems)} problem(s):[/]")
        for e in rep.problems:
            where = f"{e.task}" + ("" if e.condition == CLEAN else f"+{e.condition}") + f" {e.control}" \
                + ("" if e.seed is None else f" seed {e.seed}")
            # The note is plain text (it may hold brackets): never parse it as markup.
            console.print(Text("  ✗ ", style="red") + Text(f"{where}: {e.note}"), highlight=False)
    if rep.interrupted:
        console.print("[bold yellow]interrupted: the validation was stopped; what ran is above, the rest was not "
                      "run (no verdict)[/]")
    elif not rep.problems:
        console.print("[bold green]validation passed[/]")
    if rep.figures is not None:
        console.print(rep.figures.line(), highlight=False)
