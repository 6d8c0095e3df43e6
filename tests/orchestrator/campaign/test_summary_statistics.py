"""The summary's statistics against hand-computed values: the pass^k curve (n > k, incomplete
instances), paired comparisons (Newcombe interval, exact McNemar), attempt times, denominators
beside every rate, totals per condition, and the p90 convention a summary is verified under."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from campaign_support import declare, write_attempt

from orchestrator.campaign import metrics as m
from orchestrator.campaign.export import export_label, planned_identities, verify_label
from orchestrator.campaign.ledger import build_line
from orchestrator.campaign.summary import SUMMARY_FILE, compute_summary
from orchestrator.hashing import canonical_json
from orchestrator.identity import AttemptIdentity

TASK = "payment-run"
INFRA: dict[str, Any] = {"outcome": "infra_error", "passed": False,
                         "error": {"phase": "open", "kind": "infra_error", "message": "engine gone"}}


def _line(root: Path, system: str, seed: int, rep: int, condition: str = "clean", **kw: Any) -> dict[str, Any]:
    ident = AttemptIdentity(task=TASK, system=system, condition=condition, seed=seed, rep=rep, task_version="1")
    line = build_line(ident, write_attempt(root, "L", ident, **kw))
    assert line is not None
    return line.to_json()


# -- the pure functions --------------------------------------------------------------------------

def test_pass_hat_k_is_the_ratio_of_binomial_coefficients():
    assert m.pass_hat_k(3, 5, 2) == pytest.approx(3 / 10)      # C(3,2)/C(5,2)
    assert m.pass_hat_k(5, 5, 5) == 1.0 and m.pass_hat_k(4, 5, 5) == 0.0
    assert m.pass_hat_k(2, 4, 3) == 0.0                         # fewer passes than k
    assert m.pass_hat_k(4, 4, 1) == 1.0 and m.pass_hat_k(0, 3, 1) == 0.0
    with pytest.raises(ValueError):
        m.pass_hat_k(1, 2, 3)                                   # k > n: no estimate
    with pytest.raises(ValueError):
        m.pass_hat_k(1, 2, 0)


@pytest.mark.parametrize("b, c, p", [
    (0, 0, 1.0),                    # no discordant pair: no evidence either way
    (5, 0, 2 / 2**5),               # 2 * P(X <= 0), X ~ Bin(5, 1/2) = 0.0625
    (3, 1, 2 * 5 / 16),             # 2 * (1 + 4) / 16 = 0.625
    (1, 3, 2 * 5 / 16),             # symmetric
    (10, 2, 2 * 79 / 4096),         # 2 * (1 + 12 + 66) / 4096
    (4, 4, 1.0),                    # 2 * P(X <= 4), X ~ Bin(8, 1/2) = 2 * 163/256 > 1, capped
])
def test_mcnemar_exact_p_values(b, c, p):
    assert m.mcnemar_exact(b, c) == pytest.approx(p, abs=1e-12)


def test_newcombe_paired_interval_by_hand():
    # Wilson 95% (z = 1.959964): 1/4 -> (0.045588, 0.699358); 3/4 -> (0.300642, 0.954412);
    # 10/20 -> (0.299297, 0.700703).
    # a=1, b=2, c=0, d=1: ad - bc = 1 <= n/2 = 2, so phi = 0; delta = 0.75 - 0.25 = 0.5
    lo, hi = m.newcombe_paired(1, 2, 0, 1) or (None, None)
    assert lo == pytest.approx(0.5 - 2 ** 0.5 * (0.75 - 0.300642), abs=2e-6)   # -0.135489
    assert hi == pytest.approx(0.5 + 2 ** 0.5 * (0.25 - 0.045588), abs=2e-6)   # 0.789082
    # a=0, b=3, c=1, d=0: ad - bc = -3, phi = -3 / sqrt(3*1*1*3) = -1: the squares add with their product
    lo, hi = m.newcombe_paired(0, 3, 1, 0) or (None, None)
    assert lo == pytest.approx(0.5 - 2 * (0.75 - 0.300642), abs=2e-6)         # -0.398716
    assert hi == pytest.approx(0.5 + 2 * (0.25 - 0.045588), abs=2e-6)         # 0.908824
    # a=10, b=0, c=0, d=10: ad - bc = 100 > n/2, phi = (100 - 10) / sqrt(10^4) = 0.9
    lo, hi = m.newcombe_paired(10, 0, 0, 10) or (None, None)
    half = (0.700703 - 0.5) * (2 * (1 - 0.9)) ** 0.5                           # 0.089757
    assert (lo, hi) == (pytest.approx(-half, abs=2e-6), pytest.approx(half, abs=2e-6))
    assert m.newcombe_paired(0, 0, 0, 0) is None
    # all pairs favour the first: the interval stays inside [-1, 1] and excludes 0
    lo, hi = m.newcombe_paired(0, 20, 0, 0) or (None, None)
    assert 0 < lo < 1 and hi == 1.0


# -- pass^k in the summary -----------------------------------------------------------------------

@pytest.fixture
def curve_cell(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One cell, 4 seeds x 4 repetitions planned:
    seed 0: P P P P        (complete, all passed)
    seed 1: P F P F        (complete)
    seed 2: P infra P F    (3 scored: incomplete)
    seed 3: F              (1 scored, 3 not run)
    Attempt wall times (one turn each): seed*4 + rep seconds."""
    decl = declare(tmp_path, "L", [f"x:{TASK}"], [0, 1, 2, 3], 4)
    plan = {0: "PPPP", 1: "PFPF", 2: "PIPF", 3: "F"}
    lines = []
    for seed, verdicts in plan.items():
        for rep, v in enumerate(verdicts, 1):
            kw: dict[str, Any] = dict(INFRA) if v == "I" else {"passed": v == "P"}
            lines.append(_line(tmp_path, "x", seed, rep, durations=(float(seed * 4 + rep),), **kw))
    return decl, lines


def test_pass_k_curve_by_hand_with_n_above_k_and_incomplete_instances(curve_cell):
    decl, lines = curve_cell
    cell = compute_summary(lines, decl)["cells"][f"x:{TASK}"]
    pk = cell["pass_k"]
    # pass^1: all 4 instances: (4/4 + 2/4 + 2/3 + 0/1) / 4
    # pass^2: n >= 2 (seeds 0-2): (C(4,2)/C(4,2) + C(2,2)/C(4,2) + C(2,2)/C(3,2)) / 3 = (1 + 1/6 + 1/3) / 3
    # pass^3: seeds 0-2: (1 + 0 + C(2,3)/C(3,3)=0) / 3
    # pass^4: seeds 0-1: (1 + 0) / 2
    assert [p["k"] for p in pk["curve"]] == [1, 2, 3, 4]
    assert [p["estimate"] for p in pk["curve"]] == [
        pytest.approx((1 + 0.5 + 2 / 3 + 0) / 4, abs=1e-6),
        pytest.approx((1 + 1 / 6 + 1 / 3) / 3, abs=1e-6),
        pytest.approx(1 / 3, abs=1e-6),
        pytest.approx(0.5, abs=1e-6),
    ]
    assert [(p["instances"], p["short"]) for p in pk["curve"]] == [(4, 0), (3, 1), (3, 1), (2, 2)]
    assert (pk["k"], pk["planned"], pk["instances"], pk["incomplete"]) == (4, 4, 2, 2)
    assert (pk["passed_all"], pk["passed_at_least_once"], pk["rate"]) == (1, 2, 0.5)
    assert pk["tasks_passed_all"] == []
    # pass@1 is over attempts (8 of 12 scored), pass^1 over instances: they differ when n differs
    assert cell["pass_at_1"] == pytest.approx(8 / 12, abs=1e-6)


def test_denominators_of_a_cell_by_hand(curve_cell):
    decl, lines = curve_cell
    cell = compute_summary(lines, decl)["cells"][f"x:{TASK}"]
    # 16 planned, 13 recorded, 12 scored, 1 excluded (the infra error), 3 not run
    assert {k: cell[k] for k in ("planned", "attempts", "scored", "excluded", "not_run", "passed")} == {
        "planned": 16, "attempts": 13, "scored": 12, "excluded": 1, "not_run": 3, "passed": 8}


def test_attempt_time_median_and_p90_by_hand(curve_cell):
    decl, lines = curve_cell
    cell = compute_summary(lines, decl)["cells"][f"x:{TASK}"]
    # scored wall times: 1-9 and 11, 12, 13 (seed 2 rep 2's 10 s is an infra error, left out)
    # median of 12: (6 + 7) / 2; p90 nearest rank: rank ceil(10.8) = 11 -> 12
    assert cell["attempt_time_s"] == {"attempts": 12, "median": 6.5, "p90": 12.0}
    assert cell["turn_time_s"] == {"turns": 12, "median": 6.5, "p90": 12.0}


def test_p90_conventions_differ_where_the_pilot_said_they_would():
    xs = [float(x) for x in range(1, 11)]
    assert m.P90_BY_CONVENTION[m.P90_CONVENTION](xs) == 9.0           # rank ceil(9.0) = 9
    assert m.P90_BY_CONVENTION[m.P90_FLOOR_INDEX_CONVENTION](xs) == 10.0  # index floor(9.0) = 9


# -- paired comparisons --------------------------------------------------------------------------

def test_paired_comparison_of_two_cells_by_hand(tmp_path: Path):
    """oracle vs null, seeds 0-2 x 2 repetitions (6 planned pairs):
    (0,1) P/F  (0,2) P/P  (1,1) P/F  (1,2) infra/F  (2,1) F/F  (2,2) P/not run."""
    decl = declare(tmp_path, "L", [f"oracle:{TASK}", f"null:{TASK}"], [0, 1, 2], 2)
    a = {(0, 1): "P", (0, 2): "P", (1, 1): "P", (1, 2): "I", (2, 1): "F", (2, 2): "P"}
    b = {(0, 1): "F", (0, 2): "P", (1, 1): "F", (1, 2): "F", (2, 1): "F"}
    lines = []
    for system, plan in (("oracle", a), ("null", b)):
        for (seed, rep), v in plan.items():
            kw: dict[str, Any] = dict(INFRA) if v == "I" else {"passed": v == "P"}
            lines.append(_line(tmp_path, system, seed, rep, **kw))
    s = compute_summary(lines, decl)
    [cmp] = s["comparisons"]["cells"]
    assert (cmp["first"], cmp["second"]) == (f"oracle:{TASK}", f"null:{TASK}")
    assert cmp["pairs"] == {"planned": 6, "scored": 4, "excluded": 1, "not_run": 1}
    assert (cmp["both_passed"], cmp["first_only"], cmp["second_only"], cmp["both_failed"]) == (1, 2, 0, 1)
    assert (cmp["first_pass_rate"], cmp["second_pass_rate"], cmp["difference"]) == (0.75, 0.25, 0.5)
    assert cmp["exact_p"] == 0.5  # 2 * P(X <= 0), X ~ Bin(2, 1/2)
    assert cmp["difference_ci95"] == [pytest.approx(-0.135489, abs=2e-6), pytest.approx(0.789082, abs=2e-6)]
    # the same pairs at system level (one task): the same figures
    [sys_cmp] = s["comparisons"]["systems"]
    assert {sys_cmp["first"], sys_cmp["second"]} == {"oracle", "null"}
    assert sys_cmp["pairs"] == cmp["pairs"]


def test_cells_of_different_conditions_are_never_compared(tmp_path: Path):
    decl = declare(tmp_path, "L", [f"oracle:{TASK}", f"oracle:{TASK}+lost-writes"], [0], 1)
    lines = [_line(tmp_path, "oracle", 0, 1), _line(tmp_path, "oracle", 0, 1, condition="lost-writes", passed=False)]
    s = compute_summary(lines, decl)
    assert s["comparisons"] == {"cells": [], "systems": []}


# -- totals per condition, denominators everywhere -----------------------------------------------

def test_totals_are_per_condition_never_pooled(tmp_path: Path):
    decl = declare(tmp_path, "L", [f"oracle:{TASK}", f"null:{TASK}", f"oracle:{TASK}+lost-writes"], [0, 1], 1)
    lines = [
        _line(tmp_path, "oracle", 0, 1), _line(tmp_path, "oracle", 1, 1),
        _line(tmp_path, "null", 0, 1, passed=False),                      # null seed 1 not run
        _line(tmp_path, "oracle", 0, 1, condition="lost-writes", **INFRA),
        _line(tmp_path, "oracle", 1, 1, condition="lost-writes", passed=False),
    ]
    totals = compute_summary(lines, decl)["totals"]
    assert set(totals) == {"clean", "lost-writes"}
    assert totals["clean"] == {"planned": 4, "attempts": 3, "scored": 3, "excluded": 0, "not_run": 1, "passed": 2,
                               "infra_errors": 0, "agent_errors": 0, "task_errors": 0, "retries": 0}
    assert totals["lost-writes"] == {"planned": 2, "attempts": 2, "scored": 1, "excluded": 1, "not_run": 0,
                                     "passed": 0, "infra_errors": 1, "agent_errors": 0, "task_errors": 0,
                                     "retries": 0}


def _rate_groups(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every place of the summary that carries a pass rate, with its name."""
    out = [(f"cells.{n}", c) for n, c in summary["cells"].items()]
    out += [(f"systems.{n}", c) for n, c in summary["systems"].items()]
    out += [(f"tasks.{t}.{n}", c) for t, e in summary["tasks"].items() for n, c in e["cells"].items()]
    out += [(f"per_check.{t}.{chk['name']}.{n}", c) for t, e in summary["per_check"].items()
            for chk in e["checks"] for n, c in chk["cells"].items()]
    out += [(f"totals.{n}", c) for n, c in summary["totals"].items()]
    return out


def test_every_rate_stands_beside_planned_scored_and_excluded(curve_cell):
    decl, lines = curve_cell
    summary = compute_summary(lines, decl)
    groups = _rate_groups(summary)
    assert len(groups) >= 6
    for where, group in groups:
        assert {"planned", "scored", "excluded"} <= set(group), where
    for cmp in summary["comparisons"]["cells"] + summary["comparisons"]["systems"]:
        assert {"planned", "scored", "excluded", "not_run"} <= set(cmp["pairs"])
    check = summary["per_check"][TASK]["checks"][0]["cells"][f"x:{TASK}"]
    assert (check["planned"], check["scored"], check["excluded"]) == (16, 12, 1)


# -- export and verify ---------------------------------------------------------------------------

@pytest.fixture
def ten_turns(tmp_path: Path) -> tuple[Path, str]:
    """A label whose attempts have ten turns of 1..10 s (nearest-rank p90 9, the pilot's 10)."""
    decl = declare(tmp_path, "p", [f"oracle:{TASK}"], [0], 1)
    for ident in planned_identities(decl):
        write_attempt(tmp_path, "p", ident, durations=tuple(float(x) for x in range(1, 11)))
    export_label(tmp_path, "p")
    return tmp_path, "p"


def test_a_new_summary_declares_nearest_rank_and_verifies(ten_turns):
    root, label = ten_turns
    summary = json.loads((root / label / SUMMARY_FILE).read_text())
    assert summary["schema"] == 2 and summary["conventions"]["p90"] == m.P90_CONVENTION
    assert summary["cells"][f"oracle:{TASK}"]["turn_time_s"]["p90"] == 9.0
    assert verify_label(root, label).ok


def test_a_summary_under_the_pilot_convention_is_verified_under_it(ten_turns):
    root, label = ten_turns
    path = root / label / SUMMARY_FILE
    lines = [json.loads(t) for t in (root / label / "attempts.jsonl").read_text().splitlines()]
    decl = json.loads((root / label / "campaign.json").read_text())
    pilot = compute_summary(lines, decl, p90_convention=m.P90_FLOOR_INDEX_CONVENTION)
    assert pilot["cells"][f"oracle:{TASK}"]["turn_time_s"]["p90"] == 10.0
    path.write_text(canonical_json(pilot))
    assert verify_label(root, label).ok
    # a pilot-declared summary carrying nearest-rank figures is caught
    pilot["cells"][f"oracle:{TASK}"]["turn_time_s"]["p90"] = 9.0
    path.write_text(canonical_json(pilot))
    assert any(SUMMARY_FILE in p for p in verify_label(root, label).problems)
    # and a convention nobody defined is named
    pilot["conventions"]["p90"] = "whatever suits"
    path.write_text(canonical_json(pilot))
    assert any("unknown p90 convention" in p for p in verify_label(root, label).problems)
