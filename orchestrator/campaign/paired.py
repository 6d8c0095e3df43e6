"""Paired comparison of two groups of attempts on the same work.

Two cells (or two systems) are compared where both ran the same (task, seed, repetition) and
both attempts were scored: each such pair is concordant (both passed, both failed) or
discordant (only one passed). The difference in pass rate over the pairs comes with Newcombe's
paired 95% interval, and the exact McNemar test asks whether the discordant pairs lean one way
more than chance would. A pair with an unscored attempt on either side is excluded and counted;
a planned pair with no attempt on one side yet is counted as not run.

Pure functions of ledger lines; the summary chooses which groups to compare.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orchestrator.campaign import metrics as m

PairKey = tuple[str, int, int]  # (task, seed, rep)


def _verdicts(lines: Iterable[dict[str, Any]], unscored: frozenset[str]) -> dict[PairKey, bool | None]:
    """(task, seed, rep) -> passed, or None when the attempt is not scored."""
    out: dict[PairKey, bool | None] = {}
    for ln in lines:
        ident = ln["identity"]
        key = (str(ident["task"]), int(ident["seed"]), int(ident["rep"]))
        out[key] = None if ln.get("outcome") in unscored else bool(ln.get("passed"))
    return out


def compare(first: str, second: str, first_lines: Iterable[dict[str, Any]], second_lines: Iterable[dict[str, Any]],
            planned: Iterable[PairKey], unscored: frozenset[str]) -> dict[str, Any]:
    """The paired comparison `first` vs `second` over the `planned` (task, seed, rep) pairs.

    `difference` is pass rate of `first` minus pass rate of `second`, over scored pairs.
    """
    va, vb = _verdicts(first_lines, unscored), _verdicts(second_lines, unscored)
    planned_keys = sorted(set(planned))
    both = first_only = second_only = neither = excluded = not_run = 0
    for key in planned_keys:
        if key not in va or key not in vb:
            not_run += 1
            continue
        a, b = va[key], vb[key]
        if a is None or b is None:
            excluded += 1
        elif a and b:
            both += 1
        elif a:
            first_only += 1
        elif b:
            second_only += 1
        else:
            neither += 1
    n = both + first_only + second_only + neither
    ci = m.newcombe_paired(both, first_only, second_only, neither)
    return {
        "first": first,
        "second": second,
        "pairs": {"planned": len(planned_keys), "scored": n, "excluded": excluded, "not_run": not_run},
        "both_passed": both,
        "first_only": first_only,
        "second_only": second_only,
        "both_failed": neither,
        "first_pass_rate": m.rate(both + first_only, n),
        "second_pass_rate": m.rate(both + second_only, n),
        "difference": m.rate(first_only - second_only, n),
        "difference_ci95": list(ci) if ci else None,
        "exact_p": m.rnd(m.mcnemar_exact(first_only, second_only)) if n else None,
    }
