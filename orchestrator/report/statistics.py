"""The report's statistics tables: totals per condition, the pass^k curve with its coverage,
attempt times, and the paired comparisons, each rate beside its denominators.

Everything comes from summary.json (orchestrator/campaign/summary.py); nothing is recomputed here.
"""
from __future__ import annotations

from typing import Any

from orchestrator.report.charts import esc, pct


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def denominator_text(group: dict[str, Any]) -> str:
    """`passed/scored of planned`, with the excluded and not-run attempts when there are any."""
    text = f"{group.get('passed', 0)}/{group.get('scored', 0)} of {group.get('planned', group.get('attempts', 0))} planned"
    extra = []
    if group.get("excluded"):
        extra.append(f"{group['excluded']} excluded")
    if group.get("not_run"):
        extra.append(f"{group['not_run']} not run")
    return text + (f" ({', '.join(extra)})" if extra else "")


def totals_table(totals: dict[str, Any]) -> str:
    """One row per condition: the label's totals are never pooled across conditions."""
    out = ["<table class='t'><tr><th>condition</th><th>planned</th><th>recorded</th><th>scored</th><th>passed</th>"
           "<th>excluded</th><th>not run</th><th>agent errors</th><th>infra errors</th><th>task errors</th>"
           "<th>retries</th></tr>"]
    for cond, t in totals.items():
        if not isinstance(t, dict):
            continue
        out.append(f"<tr><td class='l'>{esc(cond)}</td><td>{t.get('planned')}</td><td>{t.get('attempts')}</td>"
                   f"<td>{t.get('scored')}</td><td>{t.get('passed')}</td><td>{t.get('excluded')}</td>"
                   f"<td>{t.get('not_run')}</td><td>{t.get('agent_errors')}</td><td>{t.get('infra_errors')}</td>"
                   f"<td>{t.get('task_errors')}</td><td>{t.get('retries')}</td></tr>")
    out.append("</table>")
    return "".join(out)


def pass_k_table(groups: dict[str, Any]) -> str:
    """Per cell (or system): pass^1 .. pass^n, each point with the instances it rests on of those
    planned, then the pilot's all-n / at-least-once counts over complete instances."""
    width = max((len(g.get("pass_k", {}).get("curve") or []) for g in groups.values()), default=0)
    out = ["<div class='wide'><table class='metrics'><tr><th>cell</th>"
           + "".join(f"<th>pass^{k}</th>" for k in range(1, width + 1))
           + "<th>complete instances</th><th>passed all</th><th>passed at least once</th></tr>"]
    for name, g in groups.items():
        pk = g.get("pass_k") or {}
        planned = pk.get("planned", 0)
        cells = []
        for point in pk.get("curve") or []:
            cells.append(f"<td>{pct(point.get('estimate'))}<br><span class='meta'>{point.get('instances')}/{planned}"
                         "</span></td>")
        cells += ["<td>-</td>"] * (width - len(cells))
        out.append(f"<tr><td>{esc(name)}</td>{''.join(cells)}<td>{pk.get('instances', 0)}/{planned}</td>"
                   f"<td>{pk.get('passed_all', 0)}</td><td>{pk.get('passed_at_least_once', 0)}</td></tr>")
    out.append("</table></div><p class='meta'>Under each estimate: the instances (task, seed) with at least k "
               "scored repetitions, of those planned; an instance short of repetitions is left out of that "
               "point, never counted as a failure or a pass.</p>")
    return "".join(out)


def times_table(cells: dict[str, Any]) -> str:
    """Per cell: attempt wall time and turn time, median and p90, with how many each rests on."""
    out = ["<table class='t'><tr><th>cell</th><th>attempts timed</th><th>attempt median s</th><th>attempt p90 s</th>"
           "<th>turns timed</th><th>turn median s</th><th>turn p90 s</th></tr>"]
    for name, c in cells.items():
        at, tt = c.get("attempt_time_s") or {}, c.get("turn_time_s") or {}
        out.append(f"<tr><td>{esc(name)}</td><td>{at.get('attempts', 0)}</td><td>{_seconds(at.get('median'))}</td>"
                   f"<td>{_seconds(at.get('p90'))}</td><td>{tt.get('turns', 0)}</td><td>{_seconds(tt.get('median'))}</td>"
                   f"<td>{_seconds(tt.get('p90'))}</td></tr>")
    out.append("</table>")
    return "".join(out)


def comparisons_table(items: list[dict[str, Any]]) -> str:
    """Paired comparisons: the pairs they rest on, the discordant counts, the difference in pass
    rate with its 95% interval, and the exact test's p-value."""
    if not items:
        return "<p class='meta'>No two groups ran the same work under the same condition.</p>"
    out = ["<div class='wide'><table class='metrics'><tr><th>first</th><th>second</th><th>pairs scored / planned</th>"
           "<th>excluded</th><th>not run</th><th>both passed</th><th>first only</th><th>second only</th>"
           "<th>both failed</th><th>difference</th><th>95% CI</th><th>exact p</th></tr>"]
    for c in items:
        pairs = c.get("pairs") or {}
        ci = c.get("difference_ci95")
        diff = c.get("difference")
        out.append(
            f"<tr><td>{esc(c.get('first'))}</td><td>{esc(c.get('second'))}</td>"
            f"<td>{pairs.get('scored', 0)}/{pairs.get('planned', 0)}</td><td>{pairs.get('excluded', 0)}</td>"
            f"<td>{pairs.get('not_run', 0)}</td><td>{c.get('both_passed', 0)}</td><td>{c.get('first_only', 0)}</td>"
            f"<td>{c.get('second_only', 0)}</td><td>{c.get('both_failed', 0)}</td>"
            f"<td>{'-' if diff is None else f'{100 * diff:+.0f} pts'}</td>"
            f"<td>{'-' if not ci else f'{100 * ci[0]:+.0f} to {100 * ci[1]:+.0f}'}</td>"
            f"<td>{'-' if c.get('exact_p') is None else format(c['exact_p'], '.4f')}</td></tr>")
    out.append("</table></div>")
    return "".join(out)
