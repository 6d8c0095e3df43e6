"""The campaign cost budget on the label page (orchestrator/model_limits.py: `cost_budget.json`,
carried in summary.json's `cost_budget`): what was spent, and when the budget stopped attempts
from starting (those are not run, never scored as failures)."""
from __future__ import annotations

from typing import Any

from orchestrator.report.charts import esc


def cost_budget_banner(note: dict[str, Any] | None) -> str:
    """One paragraph; empty when the campaign declared no cost budget."""
    if not note:
        return ""
    head = (f"Campaign cost budget <b>${float(note.get('max_cost_usd') or 0):g}</b>: "
            f"${float(note.get('spent_usd') or 0):.4f} spent")
    if not note.get("stopped"):
        return f"<p class='meta'>{head}; no attempt was held back.</p>"
    return (f"<p class='warn'><b>Stopped by the cost budget</b>. {head}; {esc(note.get('not_started'))} attempt(s) "
            f"not started (not run, not scored; each attempt counted at "
            f"${float(note.get('attempt_estimate_usd') or 0):.4f}: {esc(note.get('estimate_basis'))}).</p>")
