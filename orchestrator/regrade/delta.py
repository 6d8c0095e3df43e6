"""The delta report of a rescoring: per cell and per check, which attempts flipped and why.

Built from the result records of the source label and of the rescored one (pure: two lists of
pairs in, one mapping out), written as `delta.json` in the new label and shown by its report.
"""
from __future__ import annotations

from typing import Any

DELTA_FILE = "delta.json"


def _checks(result: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {str(c.get("name")): c for c in (result or {}).get("checks") or [] if isinstance(c, dict)}


def _state(check: dict[str, Any] | None) -> dict[str, Any] | None:
    if check is None:
        return None
    return {"passed": bool(check.get("passed")), "breach": bool(check.get("breach")),
            "required": bool(check.get("required", True)), "detail": check.get("detail")}


def _key(state: dict[str, Any]) -> tuple[bool, bool, bool]:
    return (state["passed"], state["breach"], state["required"])


def attempt_delta(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """What changed for one attempt: its verdict and each check whose pass, breach or required
    flag changed, appeared or disappeared (with the detail before and after)."""
    old, new = _checks(before), _checks(after)
    flips = []
    for name in list(old) + [n for n in new if n not in old]:
        a, b = _state(old.get(name)), _state(new.get(name))
        if a is None or b is None or _key(a) != _key(b):
            flips.append({"check": name, "before": a, "after": b})
    return {
        "passed_before": bool((before or {}).get("passed")),
        "passed_after": bool((after or {}).get("passed")),
        "outcome_before": (before or {}).get("outcome"),
        "outcome_after": (after or {}).get("outcome"),
        "checks": flips,
    }


def _kind(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    """How one check's result changed: added, removed, to_pass, to_fail, breach_changed, now_optional, now_required."""
    if a is None:
        return "added"
    if b is None:
        return "removed"
    if a["passed"] != b["passed"]:
        return "to_pass" if b["passed"] else "to_fail"
    if a["breach"] != b["breach"]:
        return "breach_changed"
    return "now_optional" if a["required"] else "now_required"


def build_delta(pairs: list[tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]]) -> dict[str, Any]:
    """`pairs`: (where: {cell, seed, rep, attempt_id, source_attempt_id}, result before, result after).

    Returns `{"cells": {cell: {"verdicts": {...}, "checks": {name: {"to_pass": [...], "to_fail": [...],
    ...}}, "attempts": [...]}}, "flipped_attempts": n, "flipped_checks": n}`; only attempts with a
    change are listed.
    """
    cells: dict[str, Any] = {}
    flipped_attempts = flipped_checks = 0
    for where, before, after in pairs:
        d = attempt_delta(before, after)
        entry = cells.setdefault(str(where["cell"]), {"verdicts": {"to_pass": 0, "to_fail": 0, "unchanged": 0},
                                                      "checks": {}, "attempts": []})
        verdict_flip = d["passed_before"] != d["passed_after"]
        entry["verdicts"]["to_pass" if verdict_flip and d["passed_after"] else
                          "to_fail" if verdict_flip else "unchanged"] += 1
        if not (verdict_flip or d["checks"] or d["outcome_before"] != d["outcome_after"]):
            continue
        flipped_attempts += verdict_flip
        entry["attempts"].append({**where, **d})
        for flip in d["checks"]:
            flipped_checks += 1
            a, b = flip["before"], flip["after"]
            kind = _kind(a, b)
            per = entry["checks"].setdefault(flip["check"], {})
            per.setdefault(kind, []).append({"seed": where["seed"], "rep": where["rep"], "attempt_id": where["attempt_id"],
                                             "before": a, "after": b})
    return {"cells": {k: cells[k] for k in sorted(cells)}, "flipped_attempts": flipped_attempts,
            "flipped_checks": flipped_checks}
