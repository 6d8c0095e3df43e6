"""`orchestrate report LABEL`: one self-contained HTML file (inline CSS and SVG, no external assets).

Sections: pass rate per cell with Wilson 95% intervals (grouped by task), turn-time distributions
per cell (points, median and p90 marked), breaches and probes per cell, and the errors. Everything
comes from the label's ledger, summary and provenance.
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from orchestrator.campaign import metrics as m

BAR_W = 420  # width of the plotting area, pixels
ROW_H = 22
LEFT = 260  # room for cell names


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _axis(width: int, top: int, ticks: list[tuple[float, str]]) -> str:
    parts = []
    for frac, label in ticks:
        x = LEFT + frac * width
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + 5}" stroke="#555"/>')
        parts.append(f'<text x="{x:.1f}" y="{top + 17}" font-size="11" text-anchor="middle">{_e(label)}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{top}" x2="{LEFT + width}" y2="{top}" stroke="#555"/>')
    return "".join(parts)


def rate_chart(rows: list[tuple[str, float | None, list[float] | None, str]], *, title: str, colour: str) -> str:
    """Horizontal bars of rates in [0, 1] with interval whiskers; rows are (name, rate, [lo, hi], note)."""
    height = ROW_H * len(rows) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + BAR_W + 140}" height="{height}" role="img" '
        f'aria-label="{_e(title)}">'
    ]
    for i, (name, value, ci, note) in enumerate(rows):
        y = 10 + i * ROW_H
        parts.append(f'<text x="{LEFT - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_e(name)}</text>')
        parts.append(f'<rect x="{LEFT}" y="{y + 3}" width="{BAR_W}" height="{ROW_H - 6}" fill="#f2f2f2"/>')
        if value is not None:
            parts.append(
                f'<rect x="{LEFT}" y="{y + 3}" width="{value * BAR_W:.1f}" height="{ROW_H - 6}" fill="{colour}">'
                f"<title>{_e(name)}: {_pct(value)}</title></rect>"
            )
        if ci:
            x1, x2 = LEFT + ci[0] * BAR_W, LEFT + ci[1] * BAR_W
            ym = y + ROW_H / 2
            parts.append(
                f'<line x1="{x1:.1f}" y1="{ym}" x2="{x2:.1f}" y2="{ym}" stroke="#222" stroke-width="1.5"/>'
                f'<line x1="{x1:.1f}" y1="{ym - 5}" x2="{x1:.1f}" y2="{ym + 5}" stroke="#222"/>'
                f'<line x1="{x2:.1f}" y1="{ym - 5}" x2="{x2:.1f}" y2="{ym + 5}" stroke="#222"/>'
            )
        parts.append(f'<text x="{LEFT + BAR_W + 8}" y="{y + 14}" font-size="12">{_e(note)}</text>')
    parts.append(_axis(BAR_W, 10 + len(rows) * ROW_H + 2, [(f, f"{int(f * 100)}%") for f in (0, 0.25, 0.5, 0.75, 1)]))
    parts.append("</svg>")
    return "".join(parts)


def count_chart(rows: list[tuple[str, float | None, str]], *, title: str, colour: str) -> str:
    """Horizontal bars of non-negative values scaled to the largest; rows are (name, value, note)."""
    top = max([v for _, v, _ in rows if v is not None] + [1e-9])
    height = ROW_H * len(rows) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + BAR_W + 140}" height="{height}" '
             f'role="img" aria-label="{_e(title)}">']
    for i, (name, value, note) in enumerate(rows):
        y = 10 + i * ROW_H
        parts.append(f'<text x="{LEFT - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_e(name)}</text>')
        if value:
            parts.append(f'<rect x="{LEFT}" y="{y + 3}" width="{value / top * BAR_W:.1f}" height="{ROW_H - 6}" fill="{colour}"/>')
        parts.append(f'<text x="{LEFT + BAR_W + 8}" y="{y + 14}" font-size="12">{_e(note)}</text>')
    parts.append(_axis(BAR_W, 10 + len(rows) * ROW_H + 2, [(f, f"{f * top:.3g}") for f in (0, 0.5, 1)]))
    parts.append("</svg>")
    return "".join(parts)


def turn_time_chart(series: list[tuple[str, list[float]]]) -> str:
    """Per cell: every turn's wall time as a dot, median (thick tick) and p90 (thin tick), log-free linear scale."""
    allv = [v for _, vs in series for v in vs]
    top = max(allv + [1.0])
    height = ROW_H * len(series) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + BAR_W + 160}" height="{height}" '
             'role="img" aria-label="turn times">']
    for i, (name, values) in enumerate(series):
        y = 10 + i * ROW_H
        ym = y + ROW_H / 2
        parts.append(f'<text x="{LEFT - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_e(name)}</text>')
        parts.append(f'<line x1="{LEFT}" y1="{ym}" x2="{LEFT + BAR_W}" y2="{ym}" stroke="#e4e4e4"/>')
        for v in sorted(values):
            parts.append(f'<circle cx="{LEFT + v / top * BAR_W:.1f}" cy="{ym}" r="3" fill="#4a78b5" fill-opacity="0.45"/>')
        med, p90 = m.median(values), m.p90(values)
        if med is not None:
            x = LEFT + med / top * BAR_W
            parts.append(f'<line x1="{x:.1f}" y1="{ym - 8}" x2="{x:.1f}" y2="{ym + 8}" stroke="#111" stroke-width="3">'
                         f'<title>median {med:.2f}s</title></line>')
        if p90 is not None:
            x = LEFT + p90 / top * BAR_W
            parts.append(f'<line x1="{x:.1f}" y1="{ym - 8}" x2="{x:.1f}" y2="{ym + 8}" stroke="#c0392b" stroke-width="2">'
                         f'<title>p90 {p90:.2f}s</title></line>')
        note = f"n={len(values)}" + (f"  p50 {med:.1f}s  p90 {p90:.1f}s" if med is not None else "")
        parts.append(f'<text x="{LEFT + BAR_W + 8}" y="{y + 14}" font-size="12">{_e(note)}</text>')
    parts.append(_axis(BAR_W, 10 + len(series) * ROW_H + 2, [(f, f"{f * top:.3g}s") for f in (0, 0.25, 0.5, 0.75, 1)]))
    parts.append("</svg>")
    return "".join(parts)


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1000px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}td:first-child,th:first-child{text-align:left}
.meta{font-size:13px;color:#555}.warn{color:#a04000}code{font-size:12px}
"""


def _causes_text(items: list[dict[str, Any]]) -> str:
    return "; ".join(f"{_e(i['cause'])} (&times;{i['count']})" for i in items)


def infra_note(cells: list[tuple[str, dict[str, Any]]]) -> str:
    """Under a pass-rate chart: per cell, the attempts left out as infrastructure errors and the
    retried tries, with their causes, so no reader takes excluded attempts for a clean run."""
    items = []
    for name, c in cells:
        causes = c.get("infra_error_causes") or {}
        excluded, retried = causes.get("excluded") or [], causes.get("retried") or []
        if not (c.get("infra_errors") or excluded or retried):
            continue
        text = f"<b>{_e(name)}</b>: {c.get('infra_errors', 0)} attempt(s) left out of the rate as infrastructure errors"
        if excluded:
            text += f": {_causes_text(excluded)}"
        if retried:
            text += f"; retried tries: {_causes_text(retried)}"
        items.append(f"<li>{text}</li>")
    if not items:
        return "<p class='meta'>No infrastructure errors: every attempt of these cells is in the rate.</p>"
    return "<ul class='warn'>" + "".join(items) + "</ul>"


def render_report(label: str, summary: dict[str, Any], lines: list[dict[str, Any]], provenance: dict[str, Any] | None) -> str:
    """The report's HTML text."""
    cells = summary.get("cells", {})
    prov = provenance or {}
    project = prov.get("project") or {}
    matrix = summary.get("matrix", {})
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Campaign {_e(label)}</title><style>{CSS}</style></head><body>",
        f"<h1>Campaign {_e(label)}</h1>",
        "<p class='meta'>"
        f"backend <b>{_e(summary.get('backend'))}</b>, isolation <b>{_e(summary.get('isolation'))}</b>; "
        f"seeds {_e(summary.get('seeds'))}, {_e(summary.get('reps'))} repetition(s); "
        f"conditions {_e(', '.join(summary.get('conditions') or []))}; "
        f"{_e(matrix.get('present'))}/{_e(matrix.get('planned'))} attempts recorded"
        + ("" if matrix.get("complete") else " <span class='warn'>(incomplete)</span>")
        + (f"<br>project commit <code>{_e(project.get('commit'))}</code>{' (dirty tree)' if project.get('dirty') else ''}; "
           f"ledger SHA-256 <code>{_e(prov.get('ledger_sha256'))}</code>" if prov else "")
        + "</p>",
    ]

    # pass rates, grouped by task
    out.append("<h2>Pass rate per cell (pass@1, Wilson 95% interval)</h2>")
    for task, entry in summary.get("tasks", {}).items():
        rows = []
        for name in entry["cells"]:
            c = cells[name]
            excluded = f", {c['infra_errors']} infra excluded" if c.get("infra_errors") else ""
            rows.append((name, c["pass_at_1"], c.get("pass_at_1_wilson95"), f"{c['passed']}/{c['scored']}{excluded}"))
        out.append(f"<h3>{_e(task)} (version {_e(entry.get('version'))})</h3>")
        out.append(rate_chart(rows, title=f"pass rate {task}", colour="#5b9f5b"))
        out.append(infra_note([(name, cells[name]) for name in entry["cells"]]))

    out.append("<h2>Per system, across tasks</h2><table><tr><th>system</th><th>tasks</th><th>attempts</th>"
               "<th>pass@1</th><th>95% CI</th><th>pass^k instances</th><th>tasks passed every time</th></tr>")
    for name, s in summary.get("systems", {}).items():
        ci = s.get("pass_at_1_wilson95")
        pk = s["pass_k"]
        out.append(
            f"<tr><td>{_e(name)}</td><td>{len(s['tasks'])}</td><td>{s['attempts']}</td><td>{_pct(s['pass_at_1'])}</td>"
            f"<td>{'-' if not ci else _pct(ci[0]) + ' - ' + _pct(ci[1])}</td>"
            f"<td>{pk['passed_all']}/{pk['instances']} (k={pk['k']})</td>"
            f"<td>{_e(', '.join(pk['tasks_passed_all']) or '-')}</td></tr>"
        )
    out.append("</table>")

    out.append("<h2>Metrics per cell</h2><table><tr><th>cell</th><th>attempts</th><th>scored</th><th>passed</th>"
               "<th>check rate</th><th>breach rate</th><th>probes/attempt</th><th>writes/attempt</th>"
               "<th>self-reversed</th><th>agent errors</th><th>infra errors</th><th>task errors</th><th>retries</th>"
               "<th>cost/accepted</th></tr>")
    for name, c in cells.items():
        cost = c["cost"]["cost_per_accepted_usd"]
        out.append(
            f"<tr><td>{_e(name)}</td><td>{c['attempts']}</td><td>{c['scored']}</td><td>{c['passed']}</td>"
            f"<td>{_pct(c['check_rate'])}</td><td>{_pct(c['breach_rate'])}</td>"
            f"<td>{'-' if c['probe_rate'] is None else c['probe_rate']}</td>"
            f"<td>{'-' if c['writes']['per_attempt'] is None else c['writes']['per_attempt']}</td>"
            f"<td>{c['writes']['self_reversed']}</td><td>{c['agent_errors']}</td><td>{c['infra_errors']}</td>"
            f"<td>{c.get('task_errors', 0)}</td>"
            f"<td>{c['retries']}</td><td>{'-' if cost is None else f'${cost:.4f}'}</td></tr>"
        )
    out.append("</table>")

    # turn times
    series: list[tuple[str, list[float]]] = []
    for name in cells:
        vals = [
            t["duration_s"]
            for ln in lines
            if ln["identity"]["cell"] == name and ln.get("outcome") not in ("infra_error", "task_error")
            for t in ln.get("turns", [])
            if isinstance(t.get("duration_s"), (int, float))
        ]
        series.append((name, vals))
    out.append("<h2>Turn times (wall seconds per turn; black: median, red: p90 by nearest rank)</h2>")
    out.append(turn_time_chart(series))

    # breaches and probes
    out.append("<h2>Breaches (attempts with at least one breach, Wilson 95%)</h2>")
    out.append(
        rate_chart(
            [(n, c["breach_rate"], c.get("breach_wilson95"), f"{c['breaches']}/{c['scored']}") for n, c in cells.items()],
            title="breach rate",
            colour="#c0392b",
        )
    )
    out.append("<h2>Probes (refused requests per attempt)</h2>")
    out.append(count_chart([(n, c["probe_rate"], f"{c['probes']} total") for n, c in cells.items()],
                           title="probes", colour="#d68910"))

    fault_cells = {n: c["fault_handling"] for n, c in cells.items() if c.get("fault_handling")}
    if fault_cells:
        out.append("<h2>Fault handling</h2><table><tr><th>cell</th><th>totals</th></tr>")
        for n, fh in fault_cells.items():
            out.append(f"<tr><td>{_e(n)}</td><td><code>{_e(json.dumps(fh, sort_keys=True))}</code></td></tr>")
        out.append("</table>")

    errors = [ln for ln in lines if ln.get("outcome") != "graded" or ln.get("retries")]
    if errors:
        out.append("<h2>Errors and retries</h2><table><tr><th>attempt</th><th>outcome</th><th>retries</th><th>error</th></tr>")
        for ln in errors:
            err = ln.get("errors") or [r.get("errors") for r in ln.get("retries", [])]
            out.append(
                f"<tr><td>{_e(ln['attempt_id'])}</td><td>{_e(ln.get('outcome'))}</td><td>{len(ln.get('retries', []))}</td>"
                f"<td><code>{_e(json.dumps(err, sort_keys=True)[:400])}</code></td></tr>"
            )
        out.append("</table>")

    conv = summary.get("conventions", {})
    out.append("<h2>Conventions</h2><ul>" + "".join(f"<li><b>{_e(k)}</b>: {_e(v)}</li>" for k, v in conv.items()) + "</ul>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write_report(runs_root: Path, label: str, out: Path | None = None) -> Path:
    """Write `runs/<label>/report.html` (or `out`) from the label's exported files."""
    root = runs_root / label
    try:
        summary = json.loads((root / "summary.json").read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{root / 'summary.json'} not found: run the campaign or `orchestrate export {label}` first") from None
    lines = [json.loads(t) for t in (root / "attempts.jsonl").read_text().splitlines() if t.strip()]
    prov_path = root / "provenance.json"
    provenance = json.loads(prov_path.read_text()) if prov_path.exists() else None
    target = out or root / "report.html"
    target.write_text(render_report(label, summary, lines, provenance), encoding="utf-8")
    return target
