"""Metrics of the campaign summary: Wilson, median/p90 conventions, pass^k, exclusion of infra errors."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from campaign_support import declare, write_attempt
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.campaign import metrics as m
from orchestrator.campaign.ledger import build_line
from orchestrator.campaign.summary import aggregate, compute_summary
from orchestrator.identity import AttemptIdentity


def _interval(k: int, n: int) -> tuple[float, float]:
    interval = m.wilson(k, n)
    assert interval is not None
    return interval


def test_wilson_known_values():
    # Reference values of the Wilson score interval (z = 1.96): 0/10, 5/10, 10/10.
    assert m.wilson(5, 10) == pytest.approx((0.236593, 0.763407), abs=1e-6)
    lo, hi = _interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.277533, abs=1e-6)
    lo, hi = _interval(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.722467, abs=1e-6)
    assert m.wilson(0, 0) is None
    with pytest.raises(ValueError):
        m.wilson(3, 2)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_the_point_estimate(kn):
    k, n = kn
    lo, hi = _interval(k, n)
    assert 0 <= lo <= k / n + 1e-6 and k / n - 1e-6 <= hi <= 1


def test_percentile_conventions():
    xs = list(range(1, 11))  # 1..10
    assert m.median(xs) == 5.5 and m.median([3, 1, 2]) == 2
    assert m.p90(xs) == 9  # nearest rank: rank ceil(9.0) = 9
    assert m.p90_floor_index(xs) == 10  # the pilot's floor(0.9 n) index 9 -> 10
    assert m.p90(list(range(1, 21))) == 18
    assert m.p90([7.0]) == 7.0 and m.p90([]) is None and m.median([]) is None


@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=200))
def test_p90_is_a_member_with_at_least_90_percent_at_or_below(xs):
    v = m.p90(xs)
    rounded = [r for r in (m.rnd(x) for x in xs) if r is not None]
    assert v is not None and v in rounded and len(rounded) == len(xs)
    assert sum(1 for r in rounded if r <= v) >= math.ceil(0.9 * len(xs) - 1e-9)


def _lines(tmp_path: Path, specs):
    out = []
    for system, seed, rep, kw in specs:
        ident = AttemptIdentity(task="payment-run", system=system, condition="clean", seed=seed, rep=rep, task_version="1")
        folder = write_attempt(tmp_path, "L", ident, **kw)
        line = build_line(ident, folder)
        assert line is not None
        out.append(line.to_json())
    return out


def test_pass_k_and_infra_exclusion(tmp_path: Path):
    lines = _lines(tmp_path, [
        ("oracle", 0, 1, {}), ("oracle", 0, 2, {}), ("oracle", 0, 3, {}),          # seed 0: all pass
        ("oracle", 1, 1, {}), ("oracle", 1, 2, {"passed": False}), ("oracle", 1, 3, {}),  # seed 1: one fails
        ("oracle", 2, 1, {}), ("oracle", 2, 2, {"outcome": "infra_error", "passed": False}), ("oracle", 2, 3, {}),
    ])
    agg = aggregate(lines, reps=3)
    assert agg["attempts"] == 9 and agg["infra_errors"] == 1 and agg["scored"] == 8
    assert agg["passed"] == 7 and agg["pass_at_1"] == pytest.approx(7 / 8, abs=1e-6)
    assert agg["pass_at_1_wilson95"] == list(_interval(7, 8))
    pk = agg["pass_k"]
    assert (pk["instances"], pk["incomplete"], pk["passed_all"], pk["passed_at_least_once"]) == (2, 1, 1, 2)
    assert pk["rate"] == 0.5 and pk["tasks_passed_all"] == []  # seed 2 is incomplete, seed 1 failed once
    # check rate over scored attempts only: 8 attempts x 2 required checks, one failed
    assert agg["required_checks"] == 16 and agg["check_rate"] == pytest.approx(15 / 16, abs=1e-6)
    # turn times: 2 turns per scored attempt (1.0 and 2.0)
    assert agg["turn_time_s"] == {"turns": 16, "median": 1.5, "p90": 2.0}


def test_breach_probe_write_cost_and_fault_rates(tmp_path: Path):
    lines = _lines(tmp_path, [
        ("x", 0, 1, {"breach": True, "probes": 3, "cost": 0.5}),
        ("x", 0, 2, {"probes": 1, "cost": 0.25}),
    ])
    agg = aggregate(lines, reps=2)
    assert agg["breach_rate"] == 0.5 and agg["breaches"] == 1 and agg["passed"] == 1
    assert agg["probe_rate"] == 2.0 and agg["probes"] == 4
    assert agg["writes"] == {"total": 8, "self_reversed": 2, "per_attempt": 4.0, "self_reversed_per_attempt": 1.0}
    assert agg["cost"] == {"cost_usd_total": 0.75, "cost_known_for": 2, "accepted": 1, "cost_per_accepted_usd": 0.75}
    assert agg["fault_handling"] is None  # clean condition
    # cost unknown for one attempt: no per-accepted figure
    lines2 = _lines(tmp_path / "b", [("x", 0, 1, {"cost": 0.5}), ("x", 0, 2, {})])
    assert aggregate(lines2, 2)["cost"]["cost_per_accepted_usd"] is None


def test_summary_never_pools_conditions(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run", "oracle:payment-run+lost-writes"], [0], 1)
    lines = []
    faulted: dict[str, Any] = {"passed": False, "fault_metrics": {"injected": {"lost_response": 2}, "resent": 1, "duplicates": 1}}
    for cond, kw in [("clean", {}), ("lost-writes", faulted)]:
        ident = AttemptIdentity(task="payment-run", system="oracle", condition=cond, seed=0, rep=1, task_version="1")
        line = build_line(ident, write_attempt(tmp_path, "L", ident, **kw))
        assert line is not None
        lines.append(line.to_json())
    s = compute_summary(lines, decl)
    assert set(s["cells"]) == {"oracle:payment-run", "oracle:payment-run+lost-writes"}
    assert set(s["systems"]) == {"oracle", "oracle+lost-writes"}
    assert s["cells"]["oracle:payment-run"]["pass_at_1"] == 1.0
    assert s["cells"]["oracle:payment-run+lost-writes"]["pass_at_1"] == 0.0
    assert s["cells"]["oracle:payment-run+lost-writes"]["fault_handling"] == \
        {"duplicates": 1, "injected": {"lost_response": 2}, "resent": 1}
    assert "pass_at_1" not in s["totals"]
    assert s["matrix"] == {"planned": 2, "present": 2, "complete": True}
    assert "nearest rank" in s["conventions"]["p90"] and "excluded" in s["conventions"]["infra_errors"]


def test_infra_errors_are_counted_with_their_causes_next_to_the_pass_rate(tmp_path: Path):
    """The causes of excluded attempts (and of retried tries) are in the summary per cell, ids
    folded so one cause is counted once however many attempts it ended."""
    dead = {"phase": "turn", "kind": "infra_error", "exception": "ErpUnhealthy",
            "message": "service 'erp' died (exit 137) in pb-3f9a2c1d77e0-erp"}
    engine = {"phase": "open", "kind": "infra_error", "exception": "EngineError", "message": "engine unavailable: 502\nmore"}
    lines = _lines(tmp_path, [
        ("oracle", 0, 1, {}),
        ("oracle", 0, 2, {"outcome": "infra_error", "passed": False, "error": dead}),
        ("oracle", 0, 3, {"outcome": "infra_error", "passed": False,
                          "error": {**dead, "message": "service 'erp' died (exit 137) in pb-0011aa22bb33-erp"}}),
        ("oracle", 1, 1, {"outcome": "infra_error", "passed": False, "error": engine}),
    ])
    agg = aggregate(lines, reps=3)
    assert agg["infra_errors"] == 3 and agg["scored"] == 1 and agg["pass_at_1"] == 1.0
    assert agg["infra_error_causes"]["excluded"] == [
        {"cause": "ErpUnhealthy in turn: service 'erp' died (exit 137) in …-erp", "count": 2},
        {"cause": "EngineError in open: engine unavailable: 502", "count": 1},
    ]
    assert agg["infra_error_causes"]["retried"] == []
    clean = aggregate(lines[:1], reps=3)
    assert clean["infra_error_causes"] == {"excluded": [], "retried": []}


def test_retried_tries_are_counted_with_their_causes(tmp_path: Path):
    from orchestrator.campaign.summary import infra_causes

    line = {"outcome": "graded", "errors": [], "retries": [
        {"try": 1, "outcome": "infra_error", "errors": [{"exception": "ContainerStartError", "phase": "open",
                                                         "message": "agent container of turn 1: 500 Server Error"}]},
        {"try": 2, "outcome": "interrupted", "errors": []}]}
    assert infra_causes([line]) == {"excluded": [], "retried": [
        {"cause": "ContainerStartError in open: agent container of turn 1: 500 Server Error", "count": 1}]}
