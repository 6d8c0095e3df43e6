"""The report of a rescored label (orchestrator/regrade/): the banner that says it is a rescoring,
never a fresh campaign, and the delta — per cell and check, the attempts that flipped, with the
check's detail before and after. Read from summary.json's `rescoring` and the label's delta.json.
"""
from __future__ import annotations

from typing import Any

from orchestrator.report.charts import esc


def banner(rescoring: dict[str, Any] | None) -> str:
    """The line at the top of a rescored label's report (empty for a campaign that ran)."""
    if not rescoring:
        return ""
    bundle = rescoring.get("source_bundle_sha256")
    where = (f", read from its publication bundle (manifest SHA-256 <code>{esc(bundle)}</code>: its redacted "
             "databases, audit logs and workspaces)" if bundle else "")
    return ("<p class='warn'><b>Rescoring</b> of label <b>" + esc(rescoring.get("source_label"))
            + "</b> (its ledger SHA-256 <code>" + esc(rescoring.get("source_ledger_sha256")) + "</code>" + where + "): the same "
            "attempts graded again with the task versions and grader named in campaign.json; not a fresh "
            "campaign, and the source label's verdicts stand unchanged in it.</p>")


def _state(state: dict[str, Any] | None) -> str:
    if state is None:
        return "<i>absent</i>"
    verdict = "passed" if state.get("passed") else "failed"
    verdict += " (breach)" if state.get("breach") else ""
    return f"{verdict}<br><small>{esc(state.get('detail'))}</small>"


def delta_view(delta: dict[str, Any] | None, reviews: dict[tuple[str, str], str] | None = None) -> str:
    """The delta section: counts, then per cell each check's flips with their details; `reviews`
    (source attempt id x check -> the source label's review decision, orchestrator/review/) puts
    the decision that asked for the change beside each flip."""
    if not delta:
        return ""
    out = [f"<h2>What the rescoring changed</h2><p class='meta'>{delta.get('regraded', 0)} attempts re-graded, "
           f"{delta.get('flipped_attempts', 0)} verdicts flipped, {delta.get('flipped_checks', 0)} check results "
           f"changed; {len(delta.get('copied_unscored') or [])} unscored attempts copied as they were; "
           f"{delta.get('missing', 0)} planned attempts had no result.</p>"]
    if delta.get("not_regradable"):
        out.append("<p class='warn'>Not re-gradable by this version (listed, not guessed):</p><ul>" + "".join(
            f"<li><code>{esc(x.get('attempt_id'))}</code>: {esc(x.get('reason'))}</li>" for x in delta["not_regradable"])
            + "</ul>")
    for cell, entry in (delta.get("cells") or {}).items():
        v = entry.get("verdicts") or {}
        out.append(f"<h3>{esc(cell)}</h3><p class='meta'>verdicts: {v.get('to_pass', 0)} to pass, {v.get('to_fail', 0)} "
                   f"to fail, {v.get('unchanged', 0)} unchanged</p>")
        rows = [(name, kind, item) for name, kinds in (entry.get("checks") or {}).items()
                for kind, items in kinds.items() for item in items]
        if not rows:
            continue
        source_of = {a.get("attempt_id"): str(a.get("source_attempt_id")) for a in entry.get("attempts") or []}
        out.append("<table class='t'><tr><th>check</th><th>change</th><th>seed</th><th>rep</th><th>before</th>"
                   "<th>after</th>" + ("<th class='l'>review (source label)</th>" if reviews is not None else "") + "</tr>")
        for name, kind, item in rows:
            review = (reviews or {}).get((source_of.get(item.get("attempt_id"), ""), name), "unreviewed")
            out.append(f"<tr><td>{esc(name)}</td><td>{esc(kind.replace('_', ' '))}</td><td>{esc(item.get('seed'))}</td>"
                       f"<td>{esc(item.get('rep'))}</td><td class='l'>{_state(item.get('before'))}</td>"
                       f"<td class='l'>{_state(item.get('after'))}</td>"
                       + (f"<td class='detail'>{esc(review)}</td>" if reviews is not None else "") + "</tr>")
        out.append("</table>")
    return "".join(out)
