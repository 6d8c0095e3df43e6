"""`summary.json`: the section 8 metrics, computed from ledger lines only.

Because the summary is a pure function of the ledger (and the declaration's seeds and
repetitions), `orchestrate export --verify` can recompute it and compare byte for byte.

Groupings (a condition is part of the cell, so faulted and clean results are never pooled):
- `cells`:   per `SYSTEM:TASK[+CONDITION]`, every metric;
- `systems`: per `SYSTEM[+CONDITION]` across its tasks (pass^k counts tasks there);
- `tasks`:   per task, an index of its cells with their headline numbers;
- `per_check`: per task, every check x cell: passed/failed/scored counts, pass rate and breaches,
  so a reader sees which judgment separates systems (the report's per-check view).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from orchestrator.campaign import metrics as m
from orchestrator.cells import CLEAN

SUMMARY_FILE = "summary.json"
SUMMARY_SCHEMA = 1
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
        "an instance is one (task, seed); it counts for pass^k when all k repetitions are scored, "
        "and passes when every one of them passed; instances with an infra error are incomplete"
    ),
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


def aggregate(lines: list[dict[str, Any]], reps: int) -> dict[str, Any]:
    """Every section 8 metric over a group of ledger lines of one condition."""
    infra = [ln for ln in lines if ln.get("outcome") == "infra_error"]
    task_errors = [ln for ln in lines if ln.get("outcome") == "task_error"]
    scored = [ln for ln in lines if ln.get("outcome") not in UNSCORED]
    n = len(scored)
    passed = sum(1 for ln in scored if ln.get("passed"))

    # pass^k over (task, seed) instances
    by_instance: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for ln in lines:
        ident = ln["identity"]
        by_instance[(ident["task"], ident["seed"])].append(ln)
    complete = incomplete = passed_all = passed_once = 0
    tasks_all: set[str] = set()
    tasks_incomplete: set[str] = set()
    for (task, _seed), group in sorted(by_instance.items()):
        if any(g.get("outcome") in UNSCORED for g in group) or len(group) < reps:
            incomplete += 1
            tasks_incomplete.add(task)
            continue
        complete += 1
        if all(g.get("passed") for g in group):
            passed_all += 1
        if any(g.get("passed") for g in group):
            passed_once += 1
    for task in {t for t, _ in by_instance}:
        insts = [g for (t, _), g in by_instance.items() if t == task]
        if task not in tasks_incomplete and all(all(x.get("passed") for x in g) for g in insts):
            tasks_all.add(task)

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
        "attempts": len(lines),
        "scored": n,
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
        "pass_k": {
            "k": reps,
            "instances": complete,
            "incomplete": incomplete,
            "passed_all": passed_all,
            "passed_at_least_once": passed_once,
            "rate": m.rate(passed_all, complete),
            "tasks_passed_all": sorted(tasks_all),
        },
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
        "turn_time_s": {"turns": len(durations), "median": m.median(durations), "p90": m.p90(durations)},
    }


def compute_summary(lines: list[dict[str, Any]], declaration: dict[str, Any]) -> dict[str, Any]:
    """The whole summary.json from the ledger lines and the campaign declaration."""
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
            **aggregate(group, reps),
        }
    systems = {}
    def key_of(c: dict[str, Any]) -> str:
        return _system_key(c, provider_tools(declaration, c["system"]))

    for key in sorted({key_of(c) for c in declaration["cells"]}):
        group = by_system.get(key, [])
        agg = aggregate(group, reps)
        agg["tasks"] = sorted({c["task"] for c in declaration["cells"] if key_of(c) == key})
        systems[key] = agg
    tasks: dict[str, Any] = {}
    for name, c in cells.items():
        version = (declaration.get("tasks", {}).get(c["task"]) or {}).get("version")
        entry = tasks.setdefault(c["task"], {"version": version, "cells": {}})
        entry["cells"][name] = {
            k: c[k] for k in ("attempts", "scored", "passed", "pass_at_1", "breaches", "infra_errors",
                              "infra_error_causes", "task_errors")
        }
    return {
        "schema": SUMMARY_SCHEMA,
        "label": declaration.get("label"),
        "backend": declaration.get("backend"),
        "isolation": declaration.get("isolation"),
        "seeds": seeds,
        "reps": reps,
        "conditions": declaration.get("conditions"),
        "conventions": CONVENTIONS,
        "matrix": {"planned": planned, "present": len(lines), "complete": len(lines) == planned},
        # Counts only: rates are never pooled across cells or conditions.
        "totals": {
            "attempts": len(lines),
            "infra_errors": sum(1 for ln in lines if ln.get("outcome") == "infra_error"),
            "agent_errors": sum(1 for ln in lines if ln.get("outcome") == "agent_error"),
            "task_errors": sum(1 for ln in lines if ln.get("outcome") == "task_error"),
            "retries": sum(len(ln.get("retries", [])) for ln in lines),
        },
        "cells": cells,
        "systems": systems,
        "tasks": {k: tasks[k] for k in sorted(tasks)},
        "per_check": per_check(lines, declaration),
    }


def per_check(lines: list[dict[str, Any]], declaration: dict[str, Any]) -> dict[str, Any]:
    """Per task: every check (in the order the grader reports them) x every declared cell."""
    out: dict[str, Any] = {}
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
                per_cell[cell] = {"scored": len(ran), "passed": ok, "failed": len(ran) - ok,
                                  "rate": m.rate(ok, len(ran)),
                                  "breaches": sum(1 for chk in ran if chk.get("breach"))}
            checks.append({"name": name, **info, "cells": per_cell})
        out[task] = {"cells": cell_names, "checks": checks}
    return out
