"""Every task pack found under tasks/, one parametrized module (a new pack needs no test file).

- handbook and lint: the committed handbook is its rendering; the clause registry, the checks'
  citations and rules, every declared negative control's policy, the generator: all clean;
- generation (slow): the same seed gives the same scenario twice (canonical database hash and
  every other file), and the scenario agrees with task.yaml (turns, identity, dates, truth);
- reference (slow): the oracle's reference, built through the local backend, holds every
  `expect` row of truth.json and no `absent` row (ensure_scenario refuses otherwise);
- containers (docker): the oracle passes, the null policy fails, and one negative control
  fails what it targets, in real containers.
"""
from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from erp_service.canonical import canonical_hash
from orchestrator.grading.rules import known_rules
from tasks import handbook
from tasks.lint import scenario_problems
from tasks.registry import list_tasks, load_task

PACKS = list_tasks()


def test_packs_are_found():
    assert {"payment-run", "payment-run-need-to-know"} <= set(PACKS)


@pytest.mark.parametrize("slug", PACKS)
def test_handbook_and_lint_are_clean(slug):
    assert handbook.problems(slug, known_rules()) == []


def _files(d: Path) -> list[str]:
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file() and p.name != "scenario.db")


@pytest.mark.slow
@pytest.mark.parametrize("slug", PACKS)
def test_generation_is_deterministic_and_agrees_with_task_yaml(slug, tmp_path):
    pack = load_task(slug)
    a = pack.generate(3, tmp_path / "a")
    b = pack.generate(3, tmp_path / "b")
    assert canonical_hash(a / "scenario.db") == canonical_hash(b / "scenario.db")
    assert _files(a) == _files(b)
    different = [f for f in _files(a) if not filecmp.cmp(a / f, b / f, shallow=False)]
    assert different == []
    assert scenario_problems(pack, a) == []


@pytest.mark.slow
@pytest.mark.parametrize("slug", PACKS)
def test_truth_rows_are_in_the_oracle_reference(slug, tmp_path):
    from orchestrator.grading.grader import load_reference
    from orchestrator.scenarios import check_truth, ensure_scenario

    scen = ensure_scenario(slug, 0, cache_root=tmp_path / "cache")  # raises on a contradiction
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
@pytest.mark.parametrize("slug", PACKS)
def test_oracle_null_and_a_negative_control_in_containers(slug, images, tmp_path):
    from orchestrator.cells import Cell
    from orchestrator.validate import AttemptRunner, control_problems, failed_checks, oracle_problems

    pack = load_task(slug)
    runner = AttemptRunner("docker", tmp_path / "runs", f"ci-{slug}")
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
