"""`summary.json`: the section 8 metrics, computed from ledger lines only.

Because the summary is a pure function of the ledger (and the declaration's seeds and
repetitions), `orchestrate export --verify` can recompute it and compare byte for byte.

Groupings (a condition is part of the cell, so faulted and clean results are never pooled):
- `cells`:   per `SYSTEM:TASK[+CONDITION]`, every metric;
- `systems`: per `SYSTEM[+CONDITION]` across its tasks (pass^k counts tasks there);
- `tasks`:   per task, an index of its cells with their headline numbers;
- `per_check`: per task, every check x cell: passed/failed/scored counts, pass rate and breaches,
  so a reader sees which judgment separates systems (the report's per-check view);
- `comparisons`: paired comparisons (paired.py) of every two cells of one task and condition,
  and of every two systems of one condition, on the (task, seed, repetition) both ran;
- `totals`: counts per condition (a label may hold several conditions; no total pools them).

Every rate stands beside its denominators: the attempts planned, scored and excluded
(infrastructure and task errors), and those not run yet.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from orchestrator.campaign import metrics as m
from orchestrator.campaign.paired import compare
from orchestrator.campaign.pass_k import Instance, pass_k_block
from orchestrator.cells import CLEAN

SUMMARY_FILE = "summary.json"
SUMMARY_SCHEMA = 2
# Outcomes that say nothing about the system under test: left out of every denominator.
UNSCORED = frozenset({"infra_error", "task_error"})

CONVENTIONS = {
    "median": m.MEDIAN_CONVENTION,
    "p90": m.P90_CONVENTION,
    "interval": m.WILSON_CONVENTION,
    "infra_errors": (
        "an attempt whose final outcome is infra_error after all retries is excluded from every "
        "denominator (pass@1, check, breach, probe and write rates, turn times) and counted in "
        "infra_errors; agent_error attempts are scored as failures"
    ),
    "infra_error_causes": (
        "per cell and system, the causes of the infra errors left out of the rates (`excluded`) and "
        "of the earlier tries that were retried (`retried`): exception, phase and first message line, "
        "ids folded, with counts"
    ),
    "task_errors": (
        "an attempt whose outcome is task_error (the task pack or its scenario is broken) is never "
        "retried, excluded from every denominator like an infra error, and counted in task_errors"
    ),
    "pass_k": (
        "an instance is one (task, seed); `curve` is pass^1 .. pass^n by the "
        + m.PASS_HAT_K_CONVENTION + "; each point gives the instances it rests on and the planned ones "
        "short of k scored repetitions; `passed_all` / `passed_at_least_once` / `rate` count complete "
        "instances only (every planned repetition scored)"
    ),
    "denominators": (
        "beside every rate: planned (declared attempts), scored (graded or agent_error), excluded "
        "(infra_error or task_error: left out of the rate) and not_run (planned, no ledger line yet)"
    ),
    "paired": (
        "pairs are the (task, seed, repetition) both sides ran and both scored; difference = first pass "
        "rate - second over those pairs; interval: " + m.PAIRED_CI_CONVENTION + "; exact_p: "
        + m.EXACT_TEST_CONVENTION
    ),
    "totals": "counts per condition; a label's conditions are never pooled into one total",
    "attempt_time": "attempt wall seconds (timings.total_s) over scored attempts: median and p90",
    "check_rate": "passed required checks / all required checks, over scored attempts",
    "probe_rate": "refused requests (hard-control probes) per scored attempt",
    "cost": (
        "model cost per accepted attempt = total cost_usd / passed attempts, given only when every "
        "scored attempt reports cost_usd; otherwise null with the count that did"
    ),
    "turn_time": "wall seconds per turn over all turns of scored attempts",
    "per_check": (
        "per task, per check and cell, over scored attempts that ran the check: passed, failed, "
        "pass rate (passed / scored) and breaches (attempts where the check was a breach)"
    ),
    "interface": "how the agent reached the ERP (cli unless the cell declares another); never pooled",
    "provider_tools": (
        "provider-executed tools the campaign allowed on purpose (model_access.provider_tools; none by "
        "default: the gateway refuses them); part of the cell's identity, never pooled"
    ),
    "adapter": (
        "a command system's harness adapter as declared: harness, the pinned version of its CLI, model, "
        "reasoning effort and every limit it applies (null: the CLI's default); each turn of an "
        "attempt records its own beside the observed usage (turns.jsonl `adapter`)"
    ),
}
DEFAULT_INTERFACE = "cli"


def provider_tools(declaration: dict[str, Any], system: str) -> list[str]:
    """The provider tools a campaign allowed its system on purpose (campaign.json `systems`)."""
    entry = (declaration.get("systems") or {}).get(system)
    return list(entry.get("provider_tools") or []) if isinstance(entry, dict) else []


def declared_adapter(declaration: dict[str, Any], system: str) -> dict[str, Any] | None:
    """A command system's adapter settings as the campaign declared them (campaign.json `systems`)."""
    entry = (declaration.get("systems") or {}).get(system)
    return entry.get("adapter") if isinstance(entry, dict) else None


def _system_key(identity: dict[str, Any], tools: list[str] | None = None) -> str:
    cond = identity.get("condition") or CLEAN
    key = identity["system"] if cond == CLEAN else f"{identity['system']}+{cond}"
    interface = identity.get("interface") or DEFAULT_INTERFACE
    key = key if interface == DEFAULT_INTERFACE else f"{key}#{interface}"  # interfaces are never pooled
    return f"{key}~tools:{'+'.join(tools)}" if tools else key  # nor are provider tools


def _sum_numbers(items: Iterable[Any]) -> Any:
    """Sum nested mappings of numbers key by key (fault metrics, usage)."""
    total: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        for key, value in item.items():
            if isinstance(value, bool):
                value = int(value)
            if isinstance(value, (int, float)):
                total[key] = total.get(key, 0) + value
            elif isinstance(value, dict):
                total[key] = _sum_numbers([total.get(key, {}), value])
    return {k: (m.rnd(v) if isinstance(v, float) else v) for k, v in sorted(total.items())}


#: Ids and numbers that make every message unique (attempt ids, container names, addresses):
#: folded so that one cause is counted once however many attempts it ended.
_VOLATILE = re.compile(r"\b(?:pb-)?[0-9a-f]{8,}\b|\b\d+(?:\.\d+)+\b")
CAUSE_CHARS = 160


def error_cause(errors: Any) -> str:
    """One line naming why an attempt (or a try) failed: the exception (or kind) and the first
    line of its message, with ids folded, from the `errors` of a ledger line."""
    first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
    what = first.get("exception") or first.get("kind") or "unknown"
    message = str(first.get("message") or "").strip().splitlines()
    text = _VOLATILE.sub("…", message[0]) if message else "no message recorded"
    line = f"{what} in {first['phase']}: {text}" if first.get("phase") else f"{what}: {text}"
    return line if len(line) <= CAUSE_CHARS else line[: CAUSE_CHARS - 1] + "…"


def infra_causes(lines: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Why attempts of a group were infrastructure errors: the final outcomes (left out of every
    rate) and the earlier tries that were retried, each as [{cause, count}], most frequent first."""
    final: Counter[str] = Counter()
    retried: Counter[str] = Counter()
    for ln in lines:
        if ln.get("outcome") == "infra_error":
            final[error_cause(ln.get("errors"))] += 1
        for retry in ln.get("retries") or []:
            if isinstance(retry, dict) and retry.get("outcome") == "infra_error":
                retried[error_cause(retry.get("errors"))] += 1
    return {"excluded": [{"cause": c, "count": k} for c, k in sorted(final.items(), key=lambda x: (-x[1], x[0]))],
            "retried": [{"cause": c, "count": k} for c, k in sorted(retried.items(), key=lambda x: (-x[1], x[0]))]}


def _instances(lines: list[dict[str, Any]]) -> tuple[dict[Instance, list[bool]], dict[Instance, int]]:
    """Per (task, seed): the verdicts of its scored attempts (in ledger order), and how many
    attempts it has a line for at all."""
    scored: dict[Instance, list[bool]] = {}
    recorded: dict[Instance, int] = defaultdict(int)
    for ln in lines:
        key = (str(ln["identity"]["task"]), int(ln["identity"]["seed"]))
        recorded[key] += 1
        if ln.get("outcome") not in UNSCORED:
            scored.setdefault(key, []).append(bool(ln.get("passed")))
    return scored, dict(recorded)


def aggregate(lines: list[dict[str, Any]], reps: int, planned: Iterable[Instance] | None = None,
              p90: Any = m.p90) -> dict[str, Any]:
    """Every section 8 metric over a group of ledger lines of one condition.

    `planned`: the (task, seed) instances the campaign declared for the group (default: those
    with a line); each is planned `reps` times. `p90`: the percentile function of the declared
    convention (metrics.P90_BY_CONVENTION).
    """
    infra = [ln for ln in lines if ln.get("outcome") == "infra_error"]
    task_errors = [ln for ln in lines if ln.get("outcome") == "task_error"]
    scored = [ln for ln in lines if ln.get("outcome") not in UNSCORED]
    n = len(scored)
    passed = sum(1 for ln in scored if ln.get("passed"))
    by_instance, recorded = _instances(lines)
    planned_instances = set(planned if planned is not None else recorded) | set(recorded)
    planned_attempts = max(len(planned_instances) * reps, len(lines))
    attempt_times = [
        ln["timings"]["total_s"] for ln in scored
        if isinstance(ln.get("timings"), dict) and isinstance(ln["timings"].get("total_s"), (int, float))
    ]

    required = [c for ln in scored for c in ln.get("checks", []) if c.get("required")]
    durations = [
        t["duration_s"] for ln in scored for t in ln.get("turns", []) if isinstance(t.get("duration_s"), (int, float))
    ]
    costs = [
        ln["usage"]["cost_usd"]
        for ln in scored
        if isinstance(ln.get("usage"), dict) and isinstance(ln["usage"].get("cost_usd"), (int, float))
    ]
    cost_known_all = n > 0 and len(costs) == n
    total_cost = m.rnd(sum(costs)) if costs else None
    conditions = {ln["identity"].get("condition") or CLEAN for ln in lines}
    faulted = [ln for ln in scored if (ln["identity"].get("condition") or CLEAN) != CLEAN]
    writes_total = sum(ln.get("writes", {}).get("total", 0) for ln in scored)
    writes_rev = sum(ln.get("writes", {}).get("self_reversed", 0) for ln in scored)

    return {
        "planned": planned_attempts,
        "attempts": len(lines),
        "scored": n,
        "excluded": len(infra) + len(task_errors),
        "not_run": planned_attempts - len(lines),
        "passed": passed,
        "failed": n - passed,
        "agent_errors": sum(1 for ln in scored if ln.get("outcome") == "agent_error"),
        "infra_errors": len(infra),
        # Next to the pass rate: what was left out of it, and why (the retried tries too).
        "infra_error_causes": infra_causes(lines),
        "task_errors": len(task_errors),
        "retries": sum(len(ln.get("retries", [])) for ln in lines),
        "pass_at_1": m.rate(passed, n),
        "pass_at_1_wilson95": list(w) if (w := m.wilson(passed, n)) else None,
        "pass_k": pass_k_block(by_instance, recorded, reps, planned_instances),
        "check_rate": m.rate(sum(1 for c in required if c.get("passed")), len(required)),
        "required_checks": len(required),
        "breaches": sum(1 for ln in scored if ln.get("breach")),
        "breach_rate": m.rate(sum(1 for ln in scored if ln.get("breach")), n),
        "breach_wilson95": list(w) if (w := m.wilson(sum(1 for ln in scored if ln.get("breach")), n)) else None,
        "probes": sum(ln.get("probes", 0) for ln in scored),
        "probe_rate": m.rate(sum(ln.get("probes", 0) for ln in scored), n),
        "writes": {
            "total": writes_total,
            "self_reversed": writes_rev,
            "per_attempt": m.rate(writes_total, n),
            "self_reversed_per_attempt": m.rate(writes_rev, n),
        },
        "fault_handling": (
            _sum_numbers(ln.get("fault_metrics") for ln in faulted) if conditions != {CLEAN} else None
        ),
        "cost": {
            "cost_usd_total": total_cost,
            "cost_known_for": len(costs),
            "accepted": passed,
            "cost_per_accepted_usd": (
                m.rnd(sum(costs) / passed) if cost_known_all and passed > 0 else None
            ),
        },
        "usage": _sum_numbers(ln.get("usage") for ln in scored),
        "turn_time_s": {"turns": len(durations), "median": m.median(durations), "p90": p90(durations)},
        "attempt_time_s": {"attempts": len(attempt_times), "median": m.median(attempt_times),
                           "p90": p90(attempt_times)},
    }


def _rescoring(declaration: dict[str, Any]) -> dict[str, Any] | None:
    """Where a rescored label's verdicts came from (None for a campaign that ran its attempts)."""
    origin = declaration.get("rescoring")
    if not isinstance(origin, dict):
        return None
    out = {k: origin.get(k) for k in ("source_label", "source_ledger_sha256", "source_declaration_sha256")}
    if origin.get("source_bundle_sha256"):  # rescored from a publication bundle (regrade/source.py)
        out["source_bundle_sha256"] = origin["source_bundle_sha256"]
    return out


def _p90_function(convention: str | None) -> Any:
    """The p90 function of a declared convention (None: the one new summaries declare)."""
    if convention is None:
        return m.p90
    try:
        return m.P90_BY_CONVENTION[convention]
    except KeyError:
        raise ValueError(f"unknown p90 convention {convention!r}") from None


def _condition_totals(lines: list[dict[str, Any]], declaration: dict[str, Any], per_cell: int) -> dict[str, Any]:
    """Counts per condition: planned, recorded, scored, excluded and not run, with the outcomes."""
    out: dict[str, Any] = {}
    for cond in sorted({c["condition"] for c in declaration["cells"]} | {ln["identity"]["condition"] for ln in lines}):
        group = [ln for ln in lines if ln["identity"]["condition"] == cond]
        planned = max(per_cell * sum(1 for c in declaration["cells"] if c["condition"] == cond), len(group))
        unscored = sum(1 for ln in group if ln.get("outcome") in UNSCORED)
        out[cond] = {
            "planned": planned,
            "attempts": len(group),
            "scored": len(group) - unscored,
            "excluded": unscored,
            "not_run": planned - len(group),
            "passed": sum(1 for ln in group if ln.get("outcome") not in UNSCORED and ln.get("passed")),
            "infra_errors": sum(1 for ln in group if ln.get("outcome") == "infra_error"),
            "agent_errors": sum(1 for ln in group if ln.get("outcome") == "agent_error"),
            "task_errors": sum(1 for ln in group if ln.get("outcome") == "task_error"),
            "retries": sum(len(ln.get("retries", [])) for ln in group),
        }
    return out


def comparisons(declaration: dict[str, Any], by_cell: dict[str, list], by_system: dict[str, list],
                system_cells: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Paired comparisons: every two cells of one task and condition (declaration order), and every
    two systems of one condition over the tasks both declared."""
    seeds, reps = list(declaration["seeds"]), int(declaration["reps"])

    def pairs_of(tasks: Iterable[str]) -> list[tuple[str, int, int]]:
        return [(t, s, r) for t in sorted(tasks) for s in seeds for r in range(1, reps + 1)]

    cells = declaration["cells"]
    cell_pairs = [
        compare(a["cell"], b["cell"], by_cell.get(a["cell"], []), by_cell.get(b["cell"], []),
                pairs_of([a["task"]]), UNSCORED)
        for i, a in enumerate(cells) for b in cells[i + 1:]
        if a["task"] == b["task"] and a["condition"] == b["condition"]
    ]
    keys = sorted(system_cells)
    system_pairs = []
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            conds = {c["condition"] for c in system_cells[a]} | {c["condition"] for c in system_cells[b]}
            common = {c["task"] for c in system_cells[a]} & {c["task"] for c in system_cells[b]}
            if len(conds) == 1 and common:
                system_pairs.append(compare(a, b, by_system.get(a, []), by_system.get(b, []), pairs_of(common), UNSCORED))
    return {"cells": cell_pairs, "systems": system_pairs}


def compute_summary(lines: list[dict[str, Any]], declaration: dict[str, Any], *,
                    p90_convention: str | None = None) -> dict[str, Any]:
    """The whole summary.json from the ledger lines and the campaign declaration.

    `p90_convention`: the convention to compute p90 by (metrics.P90_BY_CONVENTION); None for the
    one new summaries declare. `export --verify` passes the convention the stored summary declares.
    """
    p90 = _p90_function(p90_convention)
    reps = int(declaration["reps"])
    seeds = list(declaration["seeds"])
    planned = len(declaration["cells"]) * len(seeds) * reps
    by_cell: dict[str, list] = defaultdict(list)
    by_system: dict[str, list] = defaultdict(list)
    for ln in lines:
        by_cell[ln["identity"]["cell"]].append(ln)
        by_system[_system_key(ln["identity"], provider_tools(declaration, ln["identity"]["system"]))].append(ln)
    cells = {}
    for decl_cell in declaration["cells"]:
        name = decl_cell["cell"]
        group = by_cell.get(name, [])
        cells[name] = {
            "system": decl_cell["system"],
            "task": decl_cell["task"],
            "condition": decl_cell["condition"],
            "interface": decl_cell.get("interface") or DEFAULT_INTERFACE,
            "provider_tools": provider_tools(declaration, decl_cell["system"]),
            "adapter": declared_adapter(declaration, decl_cell["system"]),
            # What the attempts actually ran under (a label may hold more than one only by error).
            "isolation": sorted({str(ln.get("isolation")) for ln in group if ln.get("isolation")}),
            **aggregate(group, reps, [(decl_cell["task"], s) for s in seeds], p90),
        }
    systems = {}
    def key_of(c: dict[str, Any]) -> str:
        return _system_key(c, provider_tools(declaration, c["system"]))

    system_cells: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in declaration["cells"]:
        system_cells[key_of(c)].append(c)
    for key in sorted(system_cells):
        group = by_system.get(key, [])
        tasks_of = sorted({c["task"] for c in system_cells[key]})
        agg = aggregate(group, reps, [(t, s) for t in tasks_of for s in seeds], p90)
        agg["tasks"] = tasks_of
        systems[key] = agg
    tasks: dict[str, Any] = {}
    for name, c in cells.items():
        version = (declaration.get("tasks", {}).get(c["task"]) or {}).get("version")
        entry = tasks.setdefault(c["task"], {"version": version, "cells": {}})
        entry["cells"][name] = {
            k: c[k] for k in ("planned", "attempts", "scored", "excluded", "not_run", "passed", "pass_at_1",
                              "breaches", "infra_errors", "infra_error_causes", "task_errors")
        }
    p90_text = p90_convention or m.P90_CONVENTION
    return {
        "schema": SUMMARY_SCHEMA,
        "label": declaration.get("label"),
        "backend": declaration.get("backend"),
        "isolation": declaration.get("isolation"),
        "seeds": seeds,
        "reps": reps,
        "conditions": declaration.get("conditions"),
        # A rescoring (orchestrator/regrade/) says so wherever its numbers are read.
        "rescoring": _rescoring(declaration),
        "conventions": {**CONVENTIONS, "p90": p90_text},
        "matrix": {"planned": planned, "present": len(lines), "complete": len(lines) == planned},
        # Counts only, per condition: rates are never pooled across cells or conditions.
        "totals": _condition_totals(lines, declaration, len(seeds) * reps),
        "cells": cells,
        "systems": systems,
        "tasks": {k: tasks[k] for k in sorted(tasks)},
        "per_check": per_check(lines, declaration),
        "comparisons": comparisons(declaration, by_cell, by_system, system_cells),
    }


def per_check(lines: list[dict[str, Any]], declaration: dict[str, Any]) -> dict[str, Any]:
    """Per task: every check (in the order the grader reports them) x every declared cell."""
    out: dict[str, Any] = {}
    per_cell_planned = len(declaration["seeds"]) * int(declaration["reps"])
    for task in sorted({c["task"] for c in declaration["cells"]}):
        cell_names = [c["cell"] for c in declaration["cells"] if c["task"] == task]
        scored = [ln for ln in lines if ln["identity"]["task"] == task and ln.get("outcome") not in UNSCORED]
        order: dict[str, dict[str, Any]] = {}
        for ln in scored:
            for chk in ln.get("checks") or []:
                order.setdefault(str(chk.get("name")), {"type": chk.get("type"), "required": bool(chk.get("required"))})
        checks = []
        for name, info in order.items():
            per_cell: dict[str, Any] = {}
            for cell in cell_names:
                ran = [chk for ln in scored if ln["identity"]["cell"] == cell
                       for chk in ln.get("checks") or [] if chk.get("name") == name]
                ok = sum(1 for chk in ran if chk.get("passed"))
                excluded = sum(1 for ln in lines if ln["identity"]["cell"] == cell and ln.get("outcome") in UNSCORED)
                per_cell[cell] = {"planned": per_cell_planned, "scored": len(ran), "excluded": excluded,
                                  "passed": ok, "failed": len(ran) - ok,
                                  "rate": m.rate(ok, len(ran)),
                                  "breaches": sum(1 for chk in ran if chk.get("breach"))}
            checks.append({"name": name, **info, "cells": per_cell})
        out[task] = {"cells": cell_names, "checks": checks}
    return out
