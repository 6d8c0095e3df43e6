"""The report's summary of a label's failure review (orchestrator/review/): per check, the failed
attempts and the decisions on them, and every standing `task_wrong` decision with its note, who
made it and when — the input of a new task version."""
from __future__ import annotations

from typing import Any

from orchestrator.report.charts import esc


def review_view(summary: dict[str, Any] | None) -> str:
    """The section, or nothing when the label has no decisions yet."""
    if not summary or not summary.get("decisions"):
        return ""
    out = [f"<h2>Failure review</h2><p class='meta'>{summary['decisions']} decision(s) recorded in reviews.jsonl "
           "(append-only; the last one on a check stands).</p><table class='t'><tr><th>check</th><th>failed</th>"
           "<th>agent wrong</th><th>task wrong</th><th>undecided</th></tr>"]
    for name, c in summary.get("checks", {}).items():
        out.append(f"<tr><td>{esc(name)}</td><td>{c['failed']}</td><td>{c['agent_wrong']}</td><td>{c['task_wrong']}</td>"
                   f"<td>{c['undecided']}</td></tr>")
    out.append("</table>")
    if summary.get("task_wrong"):
        out.append("<h3>task_wrong: the check, not the agent, is judged wrong</h3><ul>" + "".join(
            f"<li><code>{esc(d['attempt_id'])}</code> / <b>{esc(d['check'])}</b>: {esc(d['note'])} "
            f"<span class='meta'>({esc(d['reviewer'])}, {esc(d['at'])})</span></li>" for d in summary["task_wrong"])
            + "</ul>")
    return "".join(out)
