"""The failure review in the report: the decisions of `reviews.jsonl` (orchestrator/review/).

On the label's page, per task and check: failed attempts, how many were judged `agent_wrong`,
`task_wrong` (by kind) and how many are unreviewed, then every `task_wrong` decision with its
note (the input to a new task version). On an attempt's page, the decision in force beside each
failed check, and the exact command that records one. The report is static: decisions are
recorded with `orchestrate review`; `orchestrate review LABEL --serve` draws the same pages with a
form beside each failed check (orchestrator/review/serve.py), never the static report.
"""
from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from orchestrator.report.charts import esc
from orchestrator.review.decisions import AGENT_WRONG, TASK_WRONG, Decision, counts_per_check, failed_checks, latest


def record_command(label: str, attempt_id: str, check: str) -> str:
    """The command that records a decision on one failed check (shell-quoted; note to be filled)."""
    return ("orchestrate review " + " ".join(shlex.quote(a) for a in (label, "--attempt", attempt_id, "--check", check))
            + " --decision agent_wrong|task_wrong [--kind alternative|handbook_gap|task_bug] --note '...'")


def review_section(label: str, lines: list[dict[str, Any]], decisions: list[Decision], *, pages: str | None,
                   problem: str = "") -> str:
    """The label page's section: counts per check, the task_wrong decisions, how to record one."""
    out = []
    if problem:
        out.append(f"<p class='warn'>The review file could not be read: {esc(problem)}</p>")
    counts = counts_per_check(lines, decisions)
    if not counts:
        return "".join(out) + "<p class='meta'>No failed check: nothing to review.</p>"
    out.append("<table class='t'><tr><th>task</th><th>check</th><th>failed</th><th>agent_wrong</th>"
               "<th>task_wrong</th><th class='l'>kinds</th><th>unreviewed</th></tr>")
    for task, checks in counts.items():
        for name, c in checks.items():
            kinds = ", ".join(f"{k} &times;{n}" for k, n in sorted(c["kinds"].items()))
            flag = " class='warn'" if c[TASK_WRONG] else ""
            out.append(f"<tr><td>{esc(task)}</td><td class='l'>{esc(name)}</td><td>{c['failed']}</td>"
                       f"<td>{c[AGENT_WRONG]}</td><td{flag}>{c[TASK_WRONG]}</td><td class='l'>{kinds}</td>"
                       f"<td>{c['unreviewed']}</td></tr>")
    out.append("</table>")
    failed = {(str(ln["attempt_id"]), str(c.get("name"))) for ln in lines for c in failed_checks(ln)}
    task_wrong = [d for k, d in latest(decisions).items() if k in failed and d.decision == TASK_WRONG]
    if task_wrong:
        out.append("<h3>task_wrong decisions (inputs to a new task version)</h3><table class='t'><tr><th>attempt</th>"
                   "<th>task</th><th>check</th><th>kind</th><th class='l'>note</th><th>who</th><th>when</th></tr>")
        for d in task_wrong:
            name = esc(d.attempt_id)
            link = f"<a href='{esc(pages)}/{name}.html'>{name}</a>" if pages else name
            out.append(f"<tr><td>{link}</td><td>{esc(d.task)} v{esc(d.task_version)}</td><td class='l'>{esc(d.check)}</td>"
                       f"<td>{esc(d.kind)}</td><td class='detail'>{esc(d.note)}</td><td>{esc(d.who)}</td>"
                       f"<td>{esc(d.when)}</td></tr>")
        out.append("</table>")
    out.append(f"<p class='meta'>Record a decision in a terminal: <code>orchestrate review {esc(shlex.quote(label))}</code> "
               "walks through the unreviewed failed checks; each attempt's page gives the one-line command for each of "
               f"its failed checks. In a browser: <code>orchestrate review {esc(shlex.quote(label))} --serve</code> "
               "serves these pages with a form beside each failed check. A later decision on the same check supersedes the earlier one "
               "(<code>reviews.jsonl</code> keeps them all); run <code>orchestrate report</code> again to see it here.</p>")
    return "".join(out)


def attempt_decisions(label: str, line: dict[str, Any], decisions: list[Decision],
                      form: Callable[[str, str], str] | None = None) -> dict[str, str]:
    """Failed check name -> the HTML shown beside it on the attempt's page: the decision in force
    (with its note, reviewer and time) or `unreviewed`, and the command that records one; with
    `form` ((attempt id, check) -> HTML, `orchestrate review --serve`), the form that records one."""
    now = latest(decisions)
    out = {}
    for c in failed_checks(line):
        name = str(c.get("name"))
        d = now.get((str(line.get("attempt_id")), name))
        if d is None:
            head = "<span class='meta'>unreviewed</span>"
        else:
            cls = "fail" if d.decision == TASK_WRONG else "meta"
            head = (f"<b class='{cls}'>{esc(d.label)}</b> <small>{esc(d.who)}, {esc(d.when)}</small>"
                    + (f"<br>{esc(d.note)}" if d.note else ""))
        out[name] = (f"{head}<br><small>record: <code>{esc(record_command(label, str(line.get('attempt_id')), name))}"
                     "</code></small>" + (form(str(line.get("attempt_id")), name) if form is not None else ""))
    return out
