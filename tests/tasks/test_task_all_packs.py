"""Every task pack found under tasks/, one parametrized module (a new pack needs no test file).

- handbook and lint: the committed handbook is its rendering; the clause registry, the checks'
  citations and rules, every declared negative control's policy, the generator: all clean;
- generation (slow): a fresh generation gives the same scenario, byte for byte, as the cached
  one (built on the shared history), and the scenario agrees with task.yaml (turns, identity,
  dates, truth);
- reference (slow): the oracle's reference, built through the local backend, holds every
  `expect` row of truth.json and no `absent` row (ensure_scenario refuses otherwise);
- containers (docker): the oracle passes, the null policy fails, and one negative control
  fails what it targets, in real containers.

The slow checks run in `make test` for a representative pair of packs (the reference's first
pack and the one whose oracle writes the most; generation for the first, containers for the
second, whose first pack has its own container tests); for every other pack they are `heavy`
(`make test-heavy`), and `make validate` runs every pack's oracle and controls on five seeds.
"""
from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from erp_service.canonical import canonical_hash
from orchestrator.grading.rules import known_rules
from tasks import handbook
from tasks.lint import scenario_problems
from tasks.packs import SCENARIO_FILES
from tasks.registry import list_tasks, load_task

PACKS = list_tasks()
REPRESENTATIVE = ("payment-run", "procure-to-pay-week")


def _only(*kept: str) -> list:
    """Every pack, those outside `kept` marked heavy (make test-heavy runs them all)."""
    return [slug if slug in kept else pytest.param(slug, marks=pytest.mark.heavy) for slug in PACKS]


def test_packs_are_found():
    assert {"payment-run", "payment-run-need-to-know"} <= set(PACKS)


@pytest.mark.parametrize("slug", PACKS)
def test_handbook_and_lint_are_clean(slug):
    assert handbook.problems(slug, known_rules()) == []


def _files(d: Path) -> list[str]:
    """The scenario's own files (the cache entry also holds its reference and a marker)."""
    return sorted(rel for p in d.rglob("*") if p.is_file()
                  and (rel := p.relative_to(d).as_posix()).split("/")[0] in SCENARIO_FILES)


def test_representative_packs_exist():
    assert set(REPRESENTATIVE) <= set(PACKS)


@pytest.mark.slow
@pytest.mark.parametrize("slug", _only("payment-run"))
def test_generation_is_deterministic_and_agrees_with_task_yaml(slug, tmp_path):
    from orchestrator.scenarios.cache import ensure_scenario

    pack = load_task(slug)
    cached = ensure_scenario(slug, 0, reference=False).dir  # on the shared history cache
    fresh = pack.generate(0, tmp_path / "fresh")  # the company built from nothing
    assert canonical_hash(cached / "scenario.db") == canonical_hash(fresh / "scenario.db")
    assert _files(cached) == _files(fresh)
    different = [f for f in _files(fresh) if not filecmp.cmp(cached / f, fresh / f, shallow=False)]
    assert different == []
    assert scenario_problems(pack, fresh) == []


@pytest.mark.slow
@pytest.mark.parametrize("slug", _only(*REPRESENTATIVE))
def test_truth_rows_are_in_the_oracle_reference(slug):
    from orchestrator.grading.grader import load_reference
    from orchestrator.scenarios.cache import check_truth, ensure_scenario

    scen = ensure_scenario(slug, 0)  # raises on a contradiction between truth and reference
    pack = load_task(slug)
    reference = load_reference(scen.reference_dir, list(pack.projections))
    truth = scen.truth
    if not pack.projections:
        # A text-answer pack has no rows to tie: its truth reaches the checks as placeholder values.
        assert truth.get("values"), f"{slug}: truth.json has neither expected rows nor values for the checks"
        return
    assert truth.get("expect"), f"{slug}: truth.json names no expected row: nothing ties it to the oracle"
    assert check_truth(reference, truth) == []


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("slug", _only("procure-to-pay-week"))  # payment-run: test_task_payment_run
def test_oracle_null_and_a_negative_control_in_containers(slug, images, tmp_path):
    from orchestrator.cells import Cell
    from orchestrator.validate import CellAttempts, control_problems, failed_checks, oracle_problems

    pack = load_task(slug)
    runner = CellAttempts("docker", tmp_path / "runs", f"ci-{slug}")
    oracle = runner(Cell("oracle", slug), 0, 1)
    n_turns = len(pack.spec.turns)
    assert oracle_problems(oracle, n_turns) == []
    null = runner(Cell("null", slug), 0, 1)
    assert null["outcome"] == "graded" and null["passed"] is False
    if pack.negative_controls:
        name, targets = sorted(pack.negative_controls.items())[0]
        neg = runner(Cell(name, slug), 0, 1)
        known = {c.name for c in pack.checks}
        assert control_problems(neg, targets, known, n_turns, strict=True) == [], failed_checks(neg)
