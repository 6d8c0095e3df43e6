"""The report's per-check view: for each task, a heat map of check x cell.

Each square holds the check's pass rate over the scored attempts of the cell, with the counts
(`passed/scored`), and is outlined and marked when any of them was a breach. The data is the
summary's `per_check` section (orchestrator/campaign/summary.py), so the HTML and the JSON agree.
A row whose squares differ is a judgment that separates the systems; the rows are kept in the
grader's order so that the task's checks read as they are declared.
"""
from __future__ import annotations

from typing import Any

from orchestrator.report.charts import esc, heat, pct


def _square(stats: dict[str, Any]) -> str:
    if not stats or not stats.get("scored"):
        return "<td class='h' style='background:#eeeeee' title='not run'>-</td>"
    breaches = int(stats.get("breaches") or 0)
    mark = f"<small>&#9888; {breaches} breach{'es' if breaches != 1 else ''}</small>" if breaches else ""
    title = f"{stats['passed']} passed, {stats['failed']} failed of {stats['scored']}" + (
        f"; {breaches} breach(es)" if breaches else "")
    if "planned" in stats:  # the denominators: planned attempts, and those excluded from the rate
        title += f"; {stats['planned']} planned, {stats.get('excluded', 0)} excluded"
    cls = "h breach" if breaches else "h"
    return (f"<td class='{cls}' style='background:{heat(stats.get('rate'))}' title='{esc(title)}'>"
            f"{pct(stats.get('rate'))}<small>{stats['passed']}/{stats['scored']}{_of_planned(stats)}</small>{mark}</td>")


def _of_planned(stats: dict[str, Any]) -> str:
    """` of N` when the square's scored attempts are fewer than planned (some excluded or not run)."""
    planned = stats.get("planned")
    return f" of {planned}" if isinstance(planned, int) and planned != stats.get("scored") else ""


def _separates(check: dict[str, Any]) -> bool:
    """True when the cells that ran the check do not all have the same pass rate."""
    rates = {s.get("rate") for s in check["cells"].values() if s.get("scored")}
    return len(rates) > 1


def per_check_view(per_check: dict[str, Any], cells: dict[str, Any]) -> str:
    """The per-check section: one heat-map table per task, columns are the task's cells."""
    if not per_check:
        return "<p class='meta'>No checks were recorded (no scored attempt).</p>"
    out = ["<p class='legend meta'>Pass rate of each check per cell over scored attempts "
           "(passed/scored); <span style='background:" + heat(0.0) + "'>0%</span>"
           "<span style='background:" + heat(0.5) + "'>50%</span>"
           "<span style='background:" + heat(1.0) + "'>100%</span>"
           "<span class='breach'>&#9888; breach</span> a check that was a breach in at least one attempt; "
           "&#8656; marks a check whose rate differs between cells.</p>"]
    for task, entry in per_check.items():
        names = entry.get("cells") or []
        out.append(f"<h3 id='checks-{esc(task)}'>{esc(task)}</h3>")
        out.append("<div class='wide'><table class='heat'><tr><th>check</th><th class='l'>type</th>")
        for name in names:
            c = cells.get(name) or {}
            sub = f"{c.get('condition', '')} · {c.get('interface', 'cli')}"
            out.append(f"<th class='c' title='{esc(name)}'>{esc(c.get('system', name))}"
                       f"<br><small>{esc(sub)}</small></th>")
        out.append("<th title='the rate differs between cells'>&#8656;</th></tr>")
        for check in entry.get("checks") or []:
            req = "" if check.get("required") else " <small>(optional)</small>"
            out.append(f"<tr><td>{esc(check['name'])}{req}</td><td class='l'><code>{esc(check.get('type'))}</code></td>")
            out.extend(_square(check["cells"].get(name) or {}) for name in names)
            out.append(f"<td>{'&#8656;' if _separates(check) else ''}</td></tr>")
        out.append("</table></div>")
    return "\n".join(out)
