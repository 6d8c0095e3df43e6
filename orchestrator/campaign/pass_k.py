"""pass^k over instances: the unbiased curve pass^1 .. pass^n, each point with its coverage.

An instance is one (task, seed). Its n scored repetitions (infrastructure and task errors are not
scored) of which c passed give the unbiased estimate C(c, k) / C(n, k) of passing k repetitions
in a row (tau-bench); pass^k is the mean of that over the instances with n >= k. Each point says
how many of the planned instances it rests on, so an instance short of repetitions (an infra
error, an attempt not yet run) is visible as a gap, never as a silently smaller denominator.

Pure functions of plain data: the summary groups the ledger lines and calls `pass_k_block`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from orchestrator.campaign import metrics as m

Instance = tuple[str, int]  # (task, seed)


def curve(scored: Mapping[Instance, Sequence[bool]], reps: int, planned: int) -> list[dict[str, object]]:
    """pass^1 .. pass^reps. `scored` maps each instance to the verdicts of its scored repetitions;
    `planned` is the number of instances the campaign declared for this group."""
    points: list[dict[str, object]] = []
    for k in range(1, reps + 1):
        used = [(sum(v), len(v)) for v in scored.values() if len(v) >= k]
        estimate = sum(m.pass_hat_k(c, n, k) for c, n in used) / len(used) if used else None
        points.append({
            "k": k,
            "estimate": m.rnd(estimate),
            "instances": len(used),          # instances with at least k scored repetitions
            "short": planned - len(used),    # planned instances left out: fewer than k scored
        })
    return points


def pass_k_block(scored: Mapping[Instance, Sequence[bool]], recorded: Mapping[Instance, int], reps: int,
                 planned: Iterable[Instance]) -> dict[str, object]:
    """The summary's `pass_k` of one group.

    `scored`: instance -> verdicts of its scored repetitions; `recorded`: instance -> attempts
    with a ledger line (scored or not); `planned`: the declared instances of the group.
    The all-k and at-least-once counts (the pilot's all-five / at-least-one) are over complete
    instances only: those with every planned repetition scored.
    """
    planned_set = set(planned) | set(recorded)
    complete = {i: v for i, v in scored.items() if len(v) >= reps}
    passed_all = sorted(i for i, v in complete.items() if all(v))
    tasks = {task for task, _ in planned_set}
    # A task passed every time: every one of its planned instances complete and all-passed.
    tasks_all = sorted(t for t in tasks if all(i in complete and all(complete[i]) for i in planned_set if i[0] == t))
    points = curve(scored, reps, len(planned_set))
    return {
        "k": reps,
        "planned": len(planned_set),
        "instances": len(complete),
        "incomplete": len(planned_set) - len(complete),
        "passed_all": len(passed_all),
        "passed_at_least_once": sum(1 for v in complete.values() if any(v)),
        # pass^k at k = n: over complete instances this is passed_all / instances
        "rate": points[-1]["estimate"] if points else None,
        "tasks_passed_all": tasks_all,
        "curve": points,
    }
