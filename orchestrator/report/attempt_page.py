"""One attempt's page of the report: everything a reader needs to judge that verdict.

Verdict and identity (cell, interface, condition, isolation); every check with its detail and
findings; for each failed state check the agent's projection beside the reference (rows that
differ are marked); the turns with durations, usage and exit status; probes (requests the ERP's
hard controls refused) and breaches with the audit rows that caused them; fault metrics and the
fault records; the transcript (orchestrator/report/transcript.py). Read from the attempt folder (contracts §9) — in a publication bundle, from its
redacted copies — and rendered as one self-contained HTML page (no script, no external asset).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from orchestrator.jsonl import read_objects
from orchestrator.report.charts import CSS, esc, plain
from orchestrator.report.transcript import TRANSCRIPT_CSS, transcript_section

STATE_TYPES = ("state_set", "state_values", "state_unchanged", "state_rows")
AUDIT_COLUMNS = ("id", "business_date", "actor", "method", "path", "action", "object", "outcome", "status",
                 "error_code", "replay")
MAX_REQUEST_CHARS = 300
MAX_PROJECTION_ROWS = 200
PHASES = ("resolve", "open", "services_queued", "services", "turn", "freeze", "grade", "teardown")  # in the order they run


def timings_text(timings: dict[str, Any]) -> str:
    """An attempt's wall times: the total, then each phase in the order the phases run."""
    if not timings:
        return "-"
    secs = {k[:-2] if k.endswith("_s") else k: v for k, v in timings.items()}
    order = [p for p in PHASES if p in secs] + sorted(set(secs) - set(PHASES) - {"total"})

    def fmt(v: Any) -> str:
        return f"{v:.2f} s" if isinstance(v, (int, float)) else plain(v)

    head = f"{fmt(secs['total'])} in all: " if "total" in secs else ""
    return head + ", ".join(f"{p} {fmt(secs[p])}" for p in order)


def _csv(path: Path) -> list[list[str]]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        return [row for _, row in zip(range(MAX_PROJECTION_ROWS + 1), csv.reader(fh), strict=False)]


def verdict_text(result: dict[str, Any]) -> tuple[str, str]:
    """(label, css class) of an attempt's verdict."""
    outcome = result.get("outcome")
    if outcome != "graded":
        return (str(outcome or "no outcome").upper(), "fail")
    if result.get("breach"):
        return ("FAIL (breach)", "fail")
    return ("PASS", "pass") if result.get("passed") else ("FAIL", "fail")


def audit_ids(refs: Any) -> list[int]:
    """Audit row ids a breach's refs point at (`audit_id`, `audit_ids`), in order."""
    if not isinstance(refs, dict):
        return []
    ids = list(refs.get("audit_ids") or [])
    if isinstance(refs.get("audit_id"), int):
        ids.append(refs["audit_id"])
    return sorted({i for i in ids if isinstance(i, int)})


def audit_table(rows: list[dict[str, Any]]) -> str:
    """Audit rows (contracts §4) as a table, the request body shortened."""
    if not rows:
        return "<p class='meta'>No audit rows.</p>"
    out = ["<div class='wide'><table class='t audit'><tr>" + "".join(f"<th>{esc(c)}</th>" for c in AUDIT_COLUMNS)
           + "<th>request</th></tr>"]
    for r in rows:
        r = dict(r, object=" ".join(str(r[k]) for k in ("object_type", "object_id") if r.get(k)))
        req = r.get("request")
        req_text = req if isinstance(req, str) else json.dumps(req, sort_keys=True)
        if req_text and len(req_text) > MAX_REQUEST_CHARS:
            req_text = req_text[:MAX_REQUEST_CHARS] + "…"
        out.append("<tr>" + "".join(f"<td class='l'>{esc('' if r.get(c) is None else plain(r.get(c)))}</td>" for c in AUDIT_COLUMNS)
                   + f"<td class='req'><code>{esc(req_text or '')}</code></td></tr>")
    out.append("</table></div>")
    return "".join(out)


def _projection_pair(folder: Path, projection: str) -> str:
    agent, ref = _csv(folder / f"{projection}.csv"), _csv(folder / f"{projection}.reference.csv")
    if not agent and not ref:
        return f"<p class='meta'>No projection <code>{esc(projection)}</code> was recorded.</p>"
    agent_rows = {tuple(r) for r in agent[1:]}
    ref_rows = {tuple(r) for r in ref[1:]}

    def table(rows: list[list[str]], other: set[tuple[str, ...]], title: str) -> str:
        if not rows:
            return f"<div><b>{esc(title)}</b><p class='meta'>empty</p></div>"
        head = "".join(f"<th class='l'>{esc(h)}</th>" for h in rows[0])
        body = "".join(
            f"<tr class='{'diff' if tuple(r) not in other else ''}'>" + "".join(f"<td class='l'>{esc(v)}</td>" for v in r) + "</tr>"
            for r in rows[1:])
        more = "<p class='meta'>(first rows only)</p>" if len(rows) > MAX_PROJECTION_ROWS else ""
        return f"<div><b>{esc(title)}</b> ({len(rows) - 1} rows)<table><tr>{head}</tr>{body}</table>{more}</div>"

    return ("<div class='side'>" + table(agent, ref_rows, f"agent: {projection}")
            + table(ref, agent_rows, f"reference: {projection}") + "</div>")


def _checks_table(checks: list[dict[str, Any]], review: dict[str, str] | None = None) -> str:
    """The checks; with `review` (failed check -> its decision's HTML), a review column beside them."""
    out = ["<table class='t'><tr><th>check</th><th>type</th><th>required</th><th>result</th><th>breach</th>"
           "<th>cites</th><th>detail</th>" + ("<th class='l'>review</th>" if review is not None else "") + "</tr>"]
    for c in checks:
        ok = "<span class='pass'>pass</span>" if c.get("passed") else "<span class='fail'>fail</span>"
        findings = c.get("findings") or []
        extra = "".join(f"<br>&bull; {esc(f.get('message') if isinstance(f, dict) else f)}" for f in findings[:10])
        out.append(
            f"<tr><td>{esc(c.get('name'))}</td><td class='l'><code>{esc(c.get('type'))}</code></td>"
            f"<td>{'yes' if c.get('required', True) else 'no'}</td><td>{ok}</td>"
            f"<td>{'<span class=fail>breach</span>' if c.get('breach') else ''}</td>"
            f"<td class='l'>{esc(', '.join(c.get('cites') or []))}</td>"
            f"<td class='detail'>{esc(c.get('detail') or '')}{extra}</td>"
            + (f"<td class='detail'>{review.get(str(c.get('name')), '')}</td>" if review is not None else "") + "</tr>")
    out.append("</table>")
    return "".join(out)


def _turns_table(turns: list[dict[str, Any]]) -> str:
    if not turns:
        return "<p class='meta'>No turns ran.</p>"
    out = ["<table><tr><th>turn</th><th>date</th><th>exit status</th><th>timed out</th><th>duration</th>"
           "<th>budget</th><th title='time waiting for the model provider&#39;s capacity (queued or throttled); "
           "the turn&#39;s budget was extended by it (up to three budgets)'>provider wait</th>"
           "<th class='l'>usage</th><th class='l'>notes</th></tr>"]
    for t in turns:
        dur = t.get("duration_s")
        usage = t.get("usage")
        out.append(
            f"<tr><td>{esc(t.get('n'))}</td><td>{esc(t.get('date'))}</td><td>{esc(t.get('exit_code'))}</td>"
            f"<td>{'yes' if t.get('timed_out') else 'no'}</td><td>{'-' if dur is None else f'{dur:.2f}s'}</td>"
            f"<td>{'-' if t.get('budget_s') is None else esc(t.get('budget_s')) + 's'}</td>"
            f"<td>{_provider_wait(usage)}</td>"
            f"<td class='detail'>{esc(plain(usage) if usage else '-')}</td>"
            f"<td class='detail'>{esc('; '.join(str(n) for n in t.get('notes') or []))}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _provider_wait(usage: dict[str, Any] | None) -> str:
    """A turn's provider wait (orchestrator/model_limits.py) and its retries; '-' when none was measured."""
    wait = (usage or {}).get("provider_wait_s")
    if wait is None:
        return "-"
    retries = (usage or {}).get("provider_retries")
    return f"{float(wait):.2f}s" + (f" ({int(retries)} retried)" if retries else "")


ADAPTER_FIELDS = ("harness", "harness_version", "model", "reasoning_effort", "max_turns", "max_output_tokens",
                  "turn_timeout_s", "tools_allowed", "tools_denied", "fixed", "notes")


def _adapter_table(turns: list[dict[str, Any]]) -> str:
    """Per turn, what the harness adapter applied (turns' `adapter`), beside the usage above."""
    rows = [t for t in turns if isinstance(t.get("adapter"), dict)]
    if not rows:
        return ""
    head = "".join(f"<th class='l'>{esc(f.replace('_', ' '))}</th>" for f in ADAPTER_FIELDS)
    out = ["<h2>Adapter settings and limits</h2><p class='meta'>What the harness applied on each turn "
           "(unset: the CLI's default); the usage it observed is in the table above.</p>",
           f"<div class='wide'><table class='t'><tr><th>turn</th>{head}</tr>"]
    for t in rows:
        a = t["adapter"]
        cells = "".join(f"<td class='l'>{esc(plain(a.get(f)) if a.get(f) not in (None, [], {}) else '-')}</td>"
                        for f in ADAPTER_FIELDS)
        out.append(f"<tr><td>{esc(t.get('n'))}</td>{cells}</tr>")
    out.append("</table></div>")
    return "".join(out)


def render_attempt_page(folder: Path, line: dict[str, Any], *, label: str, index_href: str,
                        projections_of: dict[str, str] | None = None, review: dict[str, str] | None = None) -> str:
    """The HTML of one attempt's page from its folder and its ledger line.

    `projections_of` maps a check's name to its projection (from the task pack); without it, a
    failed state check shows every projection whose agent and reference copies differ. `review`
    maps a failed check to the HTML of its review decision (orchestrator/report/review.py).
    """
    result = json.loads((folder / "result.json").read_text(encoding="utf-8")) if (folder / "result.json").is_file() else {}
    ident = line.get("identity") or {}
    verdict, cls = verdict_text(result or line)
    audit = read_objects(folder / "audit.jsonl")
    by_id = {r.get("id"): r for r in audit}
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(line.get('attempt_id'))}</title><style>{CSS}{TRANSCRIPT_CSS}</style></head><body>",
        f"<p class='meta'><a href='{esc(index_href)}'>&larr; campaign {esc(label)}</a></p>",
        f"<h1>{esc(ident.get('cell'))} · seed {esc(ident.get('seed'))} · rep {esc(ident.get('rep'))}</h1>",
        f"<p>Verdict: <span class='{cls}'>{esc(verdict)}</span></p>",
        "<table class='t kv'>"
        + "".join(f"<tr><th>{esc(k)}</th><td class='l'>{esc(v)}</td></tr>" for k, v in (
            ("attempt", line.get("attempt_id")), ("system", ident.get("system")), ("task", ident.get("task")),
            ("task version", ident.get("task_version")), ("interface", result.get("interface") or "cli"),
            ("condition", ident.get("condition")), ("isolation", result.get("isolation") or line.get("isolation")),
            ("outcome", result.get("outcome")), ("probes", line.get("probes")), ("breaches", line.get("breach_count")),
            ("writes", plain(line.get("writes"))), ("usage", plain(result.get("usage") or None)),
            ("time", timings_text(result.get("timings") or {}))))
        + "</table>",
    ]
    errors = line.get("errors") or []
    if errors:
        out.append("<h2>Errors</h2>" + "".join(
            f"<pre>{esc(json.dumps(e, sort_keys=True, indent=1)[:3000])}</pre>" for e in errors))
    for i, retry in enumerate(line.get("retries") or [], 1):
        out.append(f"<p class='warn'>Earlier try {i}: {esc(retry.get('outcome'))} "
                   f"<code>{esc(json.dumps(retry.get('errors'), sort_keys=True)[:400])}</code></p>")

    checks = [c for c in result.get("checks") or [] if isinstance(c, dict)]
    out.append(f"<h2>Checks ({sum(1 for c in checks if c.get('passed'))}/{len(checks)} passed)</h2>")
    out.append(_checks_table(checks, review) if checks else "<p class='meta'>No checks (the attempt was not graded).</p>")

    failed_state = [c for c in checks if not c.get("passed") and str(c.get("type")) in STATE_TYPES]
    if failed_state:
        out.append("<h2>Failed state checks: the agent's projection beside the reference</h2>"
                   "<p class='meta'>Rows marked red are in one table and not in the other.</p>")
        proj = folder / "projections"
        for c in failed_state:
            name = str(c.get("name"))
            projection = (projections_of or {}).get(name)
            out.append(f"<h3>{esc(name)}</h3>")
            if projection:
                out.append(_projection_pair(proj, projection))
                continue
            differing = [p.name[: -len(".reference.csv")] for p in sorted(proj.glob("*.reference.csv"))
                         if _csv(p) != _csv(proj / p.name.replace(".reference.csv", ".csv"))]
            out.extend(_projection_pair(proj, p) for p in differing)

    out.append("<h2>Turns</h2>" + _turns_table(result.get("turns") or line.get("turns") or []))
    out.append(_adapter_table(result.get("turns") or line.get("turns") or []))
    out.append(transcript_section(folder, result))

    breaches = [b for b in result.get("breaches") or [] if isinstance(b, dict)]
    out.append(f"<h2>Breaches ({len(breaches)})</h2>")
    if not breaches:
        out.append("<p class='meta'>None.</p>")
    for b in breaches:
        ids = audit_ids(b.get("refs"))
        out.append(f"<h3>{esc(b.get('check') or b.get('rule'))} <small><code>{esc(b.get('rule'))}</code></small></h3>"
                   f"<p>{esc(b.get('message'))}</p>")
        if ids:
            out.append(audit_table([by_id[i] for i in ids if i in by_id]))
        else:
            out.append(f"<p class='meta'>refs: {esc(plain(b.get('refs')))}</p>")

    probes = [r for r in audit if r.get("outcome") == "refused" and r.get("channel") == "api"]
    out.append(f"<h2>Probes ({line.get('probes', len(probes))}): requests a hard control refused</h2>")
    out.append(audit_table(probes))

    faults = read_objects(folder / "faults.jsonl")
    if result.get("fault_metrics") or faults:
        out.append("<h2>Fault metrics</h2>")
        fm = result.get("fault_metrics") or {}
        out.append("<table class='t kv'>" + "".join(
            f"<tr><th>{esc(k)}</th><td class='l'>{esc(plain(v))}</td></tr>" for k, v in sorted(fm.items())) + "</table>")
        cols = ("seq", "kind", "rule", "method", "path", "business_date", "committed", "client_status", "audit_before",
                "audit_after")
        out.append("<h3>Injected faults</h3><div class='wide'><table class='t'><tr>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>" + "".join(
            "<tr>" + "".join(f"<td class='l'>{esc(plain(f.get(c)))}</td>" for c in cols) + "</tr>" for f in faults) + "</table></div>")
    out.append("</body></html>\n")
    return "\n".join(out)
