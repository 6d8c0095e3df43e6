"""`orchestrate report LABEL`: a self-contained HTML report (inline CSS and SVG, no external assets).

`report.html` holds: the cells with the interface, condition and isolation each ran under; the
totals per condition; pass rate per cell with Wilson 95% intervals and its denominators (grouped
by task); the pass^k curve with its coverage; the paired comparisons
(orchestrator/report/statistics.py); the per-check view (check x cell heat
map per task, orchestrator/report/checks.py); attempt and turn times (turn-time distributions per
cell: points, median and p90 marked); breaches and probes per cell; the errors; and every attempt, linked to its
page in `report_files/` beside it (orchestrator/report/attempt_page.py). The two together are
the report folder: copy `report.html` with `report_files/`. Everything comes from the label's
ledger, summary, provenance and attempt folders.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.identity import AttemptIdentity
from orchestrator.regrade.delta import DELTA_FILE
from orchestrator.report.attempt_page import render_attempt_page, verdict_text
from orchestrator.report.charts import CSS, count_chart, esc, pct, plain, rate_chart, turn_time_chart
from orchestrator.report.checks import per_check_view
from orchestrator.report.cost_budget import cost_budget_banner
from orchestrator.report.rescoring import banner, delta_view
from orchestrator.report.review import attempt_decisions, review_section
from orchestrator.report.statistics import (
    comparisons_table,
    denominator_text,
    pass_k_table,
    times_table,
    totals_table,
)
from orchestrator.review.decisions import Decision, ReviewError, latest
from orchestrator.review.decisions import read as read_decisions

PAGES_DIR = "report_files"  # attempt pages, beside report.html ("Save page" convention)


def _causes_text(items: list[dict[str, Any]]) -> str:
    return "; ".join(f"{esc(i['cause'])} (&times;{i['count']})" for i in items)


def infra_note(cells: list[tuple[str, dict[str, Any]]]) -> str:
    """Under a pass-rate chart: per cell, the attempts left out as infrastructure errors and the
    retried tries, with their causes, so no reader takes excluded attempts for a clean run."""
    items = []
    for name, c in cells:
        causes = c.get("infra_error_causes") or {}
        excluded, retried = causes.get("excluded") or [], causes.get("retried") or []
        if not (c.get("infra_errors") or excluded or retried):
            continue
        text = f"<b>{esc(name)}</b>: {c.get('infra_errors', 0)} attempt(s) left out of the rate as infrastructure errors"
        if excluded:
            text += f": {_causes_text(excluded)}"
        if retried:
            text += f"; retried tries: {_causes_text(retried)}"
        items.append(f"<li>{text}</li>")
    if not items:
        return "<p class='meta'>No infrastructure errors: every attempt of these cells is in the rate.</p>"
    return "<ul class='warn'>" + "".join(items) + "</ul>"


def page_name(attempt_id: str) -> str:
    """The file name of an attempt's page (attempt ids are already file-name safe)."""
    return f"{attempt_id}.html"


def cells_table(cells: dict[str, Any]) -> str:
    """Every cell with the system, task, interface, condition, provider tools allowed on purpose
    and isolation it ran under."""
    out = ["<table class='t'><tr><th>cell</th><th>system</th><th>task</th><th>interface</th><th>condition</th>"
           "<th>provider tools</th><th>isolation</th><th>attempts</th></tr>"]
    for name, c in cells.items():
        iso = ", ".join(c.get("isolation") or []) or "-"
        out.append(f"<tr><td>{esc(name)}</td><td class='l'>{esc(c.get('system'))}</td><td class='l'>{esc(c.get('task'))}</td>"
                   f"<td class='l'>{esc(c.get('interface', 'cli'))}</td><td class='l'>{esc(c.get('condition'))}</td>"
                   f"<td class='l'>{esc(', '.join(c.get('provider_tools') or []) or 'none')}</td>"
                   f"<td class='l'>{esc(iso)}</td><td>{c.get('attempts', 0)}</td></tr>")
    out.append("</table>")
    return "".join(out)


FAULT_COLUMNS = ("faults_injected", "by_kind", "committed_behind_a_failure", "faulted_requests_resent",
                 "resends_observed", "resent_with_key", "duplicates")


def fault_table(fault_cells: dict[str, dict[str, Any]]) -> str:
    """Per fault cell, its fault-handling totals one per column (the summary's names; the known
    ones first, in the order a reader follows a fault: injected, resent, with a key, duplicated)."""
    keys = [k for k in FAULT_COLUMNS if any(k in fh for fh in fault_cells.values())]
    keys += sorted({k for fh in fault_cells.values() for k in fh} - set(keys))
    texts = {k for k in keys if any(isinstance(fh.get(k), (dict, list)) for fh in fault_cells.values())}  # left-aligned
    out = ["<div class='wide'><table class='metrics faults'><tr><th>cell</th>"
           + "".join(f"<th class='{'l' if k in texts else ''}'>{esc(k).replace('_', '_<wbr>')}</th>" for k in keys) + "</tr>"]
    for name, fh in fault_cells.items():
        out.append(f"<tr><td>{esc(name)}</td>" + "".join(
            f"<td class='{'kv' if k in texts else ''}'>{esc(plain(fh.get(k)))}</td>"
            for k in keys) + "</tr>")
    out.append("</table></div>")
    return "".join(out)


def attempts_table(lines: list[dict[str, Any]], pages: str | None) -> str:
    """Every attempt with its verdict, linked to its page when pages were written."""
    out = ["<table><tr><th>attempt</th><th>seed</th><th>rep</th><th class='l'>verdict</th><th>checks passed</th>"
           "<th>breaches</th><th>probes</th></tr>"]
    for ln in lines:
        ident = ln["identity"]
        verdict, cls = verdict_text(ln)
        name = esc(ident["cell"])
        link = f"<a href='{esc(pages)}/{esc(page_name(ln['attempt_id']))}'>{name}</a>" if pages else name
        checks = ln.get("checks") or []
        out.append(f"<tr><td>{link}</td><td>{esc(ident.get('seed'))}</td><td>{esc(ident.get('rep'))}</td>"
                   f"<td class='l'><span class='{cls}'>{esc(verdict)}</span></td>"
                   f"<td>{sum(1 for c in checks if c.get('passed'))}/{len(checks)}</td>"
                   f"<td>{ln.get('breach_count', 0)}</td><td>{ln.get('probes', 0)}</td></tr>")
    out.append("</table>")
    return "".join(out)


def render_report(label: str, summary: dict[str, Any], lines: list[dict[str, Any]], provenance: dict[str, Any] | None,
                  *, pages: str | None = None, delta: dict[str, Any] | None = None, review: str = "",
                  source_reviews: dict[tuple[str, str], str] | None = None) -> str:
    """The report's HTML text; `pages` is the folder (relative to it) holding the attempt pages;
    `delta` the delta.json of a rescored label, `source_reviews` its source label's review
    decisions (beside each flip); `review` the failure review's section
    (orchestrator/report/review.py)."""
    cells = summary.get("cells", {})
    prov = provenance or {}
    project = prov.get("project") or {}
    matrix = summary.get("matrix", {})
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Campaign {esc(label)}</title><style>{CSS}</style></head><body>",
        f"<h1>{'Rescoring' if summary.get('rescoring') else 'Campaign'} {esc(label)}</h1>",
        banner(summary.get("rescoring")),
        cost_budget_banner(summary.get("cost_budget")),
        "<p class='meta'>"
        f"backend <b>{esc(summary.get('backend'))}</b>, isolation <b>{esc(summary.get('isolation'))}</b>; "
        f"seeds {esc(summary.get('seeds'))}, {esc(summary.get('reps'))} repetition(s); "
        f"conditions {esc(', '.join(summary.get('conditions') or []))}; "
        f"{esc(matrix.get('present'))}/{esc(matrix.get('planned'))} attempts recorded"
        + ("" if matrix.get("complete") else " <span class='warn'>(incomplete)</span>")
        + (f"<br>project commit <code>{esc(project.get('commit'))}</code>{' (dirty tree)' if project.get('dirty') else ''}; "
           f"ledger SHA-256 <code>{esc(prov.get('ledger_sha256'))}</code>" if prov else "")
        + "</p>",
    ]

    out.append(delta_view(delta, source_reviews))
    out.append("<h2>Cells</h2>" + cells_table(cells))
    totals = summary.get("totals") or {}
    if totals and all(isinstance(t, dict) for t in totals.values()):
        out.append("<h2>Totals per condition (never pooled)</h2>" + totals_table(totals))

    # pass rates, grouped by task
    out.append("<h2>Pass rate per cell (pass@1, Wilson 95% interval)</h2>")
    for task, entry in summary.get("tasks", {}).items():
        rows = []
        for name in entry["cells"]:
            c = cells[name]
            rows.append((name, c["pass_at_1"], c.get("pass_at_1_wilson95"), denominator_text(c)))
        out.append(f"<h3>{esc(task)} (version {esc(entry.get('version'))})</h3>")
        out.append(rate_chart(rows, title=f"pass rate {task}", colour="#5b9f5b"))
        out.append(infra_note([(name, cells[name]) for name in entry["cells"]]))

    out.append("<h2>pass^k per cell (unbiased estimator over the scored repetitions)</h2>" + pass_k_table(cells))
    comparisons = summary.get("comparisons") or {}
    out.append("<h2>Paired comparisons of cells (same task, condition, seeds and repetitions)</h2>"
               + comparisons_table(comparisons.get("cells") or []))
    out.append("<h2>Paired comparisons of systems (same condition, across the tasks both ran)</h2>"
               + comparisons_table(comparisons.get("systems") or []))

    out.append("<h2>Per check: which judgment separates the systems</h2>")
    out.append(per_check_view(summary.get("per_check") or {}, cells))

    out.append("<h2>Per system, across tasks</h2><table><tr><th>system</th><th>tasks</th><th>attempts</th>"
               "<th>pass@1</th><th>95% CI</th><th>pass^k instances</th><th>tasks passed every time</th></tr>")
    for name, s in summary.get("systems", {}).items():
        ci = s.get("pass_at_1_wilson95")
        pk = s["pass_k"]
        out.append(
            f"<tr><td>{esc(name)}</td><td>{len(s['tasks'])}</td><td>{s['attempts']}</td><td>{pct(s['pass_at_1'])}</td>"
            f"<td>{'-' if not ci else pct(ci[0]) + ' - ' + pct(ci[1])}</td>"
            f"<td>{pk['passed_all']}/{pk['instances']} of {pk.get('planned', pk['instances'])} (k={pk['k']})</td>"
            f"<td>{esc(', '.join(pk['tasks_passed_all']) or '-')}</td></tr>"
        )
    out.append("</table>")

    # Header words break only between words (and after a slash), never inside one.
    out.append("<h2>Metrics per cell</h2><div class='wide'><table class='metrics'><tr><th>cell</th><th>planned</th>"
               "<th>attempts</th><th>scored</th><th>excluded</th><th>passed</th>"
               "<th>check rate</th><th>breach rate</th><th>probes/<wbr>attempt</th><th>writes/<wbr>attempt</th>"
               "<th>self-reversed</th><th>agent errors</th><th>infra errors</th><th>task errors</th><th>retries</th>"
               "<th>cost/<wbr>accepted</th></tr>")
    for name, c in cells.items():
        cost = c["cost"]["cost_per_accepted_usd"]
        out.append(
            f"<tr><td>{esc(name)}</td><td>{c.get('planned', '-')}</td><td>{c['attempts']}</td><td>{c['scored']}</td>"
            f"<td>{c.get('excluded', '-')}</td><td>{c['passed']}</td>"
            f"<td>{pct(c['check_rate'])}</td><td>{pct(c['breach_rate'])}</td>"
            f"<td>{'-' if c['probe_rate'] is None else c['probe_rate']}</td>"
            f"<td>{'-' if c['writes']['per_attempt'] is None else c['writes']['per_attempt']}</td>"
            f"<td>{c['writes']['self_reversed']}</td><td>{c['agent_errors']}</td><td>{c['infra_errors']}</td>"
            f"<td>{c.get('task_errors', 0)}</td>"
            f"<td>{c['retries']}</td><td>{'-' if cost is None else f'${cost:.4f}'}</td></tr>"
        )
    out.append("</table></div>")

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
    out.append("<h2>Attempt and turn times (wall seconds, scored attempts)</h2>" + times_table(cells))
    out.append("<h2>Turn times (wall seconds per turn; black: median, red: p90 by nearest rank)</h2>")
    out.append(turn_time_chart(series))

    # breaches and probes
    out.append("<h2>Breaches (attempts with at least one breach, Wilson 95%)</h2>")
    out.append(
        rate_chart(
            [(n, c["breach_rate"], c.get("breach_wilson95"), denominator_text({**c, "passed": c["breaches"]}))
             for n, c in cells.items()],
            title="breach rate",
            colour="#c0392b",
        )
    )
    out.append("<h2>Probes (refused requests per attempt)</h2>")
    out.append(count_chart([(n, c["probe_rate"], f"{c['probes']} total") for n, c in cells.items()],
                           title="probes", colour="#d68910"))

    fault_cells = {n: c["fault_handling"] for n, c in cells.items() if c.get("fault_handling")}
    if fault_cells:
        out.append("<h2>Fault handling</h2>" + fault_table(fault_cells))

    errors = [ln for ln in lines if ln.get("outcome") != "graded" or ln.get("retries")]
    if errors:
        out.append("<h2>Errors and retries</h2><table><tr><th>attempt</th><th>outcome</th><th>retries</th><th>error</th></tr>")
        for ln in errors:
            err = ln.get("errors") or [r.get("errors") for r in ln.get("retries", [])]
            out.append(
                f"<tr><td>{esc(ln['attempt_id'])}</td><td>{esc(ln.get('outcome'))}</td><td>{len(ln.get('retries', []))}</td>"
                f"<td><code>{esc(json.dumps(err, sort_keys=True)[:400])}</code></td></tr>"
            )
        out.append("</table>")

    if review:
        out.append("<h2 id='review'>Failure review: agent wrong or task wrong</h2>" + review)
    out.append("<h2>Attempts</h2>" + attempts_table(lines, pages))

    conv = summary.get("conventions", {})
    out.append("<h2>Conventions</h2><ul>" + "".join(f"<li><b>{esc(k)}</b>: {esc(v)}</li>" for k, v in conv.items()) + "</ul>")
    out.append("</body></html>\n")
    return "\n".join(out)


def check_projections(task: str) -> dict[str, str]:
    """Check name -> projection of a task's state checks (empty when the pack cannot be loaded:
    the attempt pages then show every projection that differs from its reference)."""
    try:
        from tasks.registry import load_task

        pack = load_task(task)
    except Exception:  # noqa: BLE001 — a report of results whose pack is not here must still render
        return {}
    out = {}
    for check in pack.checks:
        projection = getattr(check, "projection", None)
        if isinstance(projection, str):
            out[str(check.name)] = projection
    return out


def write_report(runs_root: Path, label: str, out: Path | None = None, *, title: str | None = None,
                 review_form: Callable[[str, str], str] | None = None) -> Path:
    """Write `runs/<label>/report.html` (or `out`) and the attempt pages in `report_files/` beside
    it, from the label's exported files and attempt folders. `review_form`: (attempt id, check) ->
    the HTML form beside each failed check (the served review, orchestrator/review/serve.py)."""
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
    pages = target.parent / PAGES_DIR
    pages.mkdir(parents=True, exist_ok=True)
    decisions, problem = _decisions(root)
    projections: dict[str, dict[str, str]] = {}
    for ln in lines:
        ident = ln["identity"]
        folder = AttemptIdentity.from_dict(ident).folder(runs_root, label)
        if ident["task"] not in projections:
            projections[ident["task"]] = check_projections(ident["task"])
        page = render_attempt_page(folder, ln, label=title or label, index_href=f"../{target.name}",
                                   projections_of=projections[ident["task"]],
                                   review=attempt_decisions(title or label, ln, decisions, review_form))
        (pages / page_name(ln["attempt_id"])).write_text(page, encoding="utf-8")
    delta_path = root / DELTA_FILE  # a rescored label's (orchestrator/regrade/)
    delta = json.loads(delta_path.read_text()) if delta_path.is_file() else None
    review = review_section(title or label, lines, decisions, pages=PAGES_DIR, problem=problem)
    source_reviews = None
    # The decisions that asked for the change: the source label's, or the source bundle's copy.
    source_root = None
    if delta and delta.get("source_bundle") and Path(str(delta["source_bundle"])).is_dir():
        source_root = Path(str(delta["source_bundle"]))
    elif delta and (runs_root / str(delta.get("source_label"))).is_dir():
        source_root = runs_root / str(delta.get("source_label"))
    if source_root is not None:
        source_decisions, _ = _decisions(source_root)
        source_reviews = {k: f"{d.label}: {d.note} ({d.who})" for k, d in latest(source_decisions).items()}
    target.write_text(render_report(title or label, summary, lines, provenance, pages=PAGES_DIR, delta=delta,
                                    review=review, source_reviews=source_reviews),
                      encoding="utf-8")
    return target


def _decisions(root: Path) -> tuple[list[Decision], str]:
    """The label's review decisions, and the reason when its file cannot be read (shown, not fatal:
    `export --verify` reports the file's problems)."""
    try:
        return read_decisions(root), ""
    except ReviewError as exc:
        return [], str(exc)
