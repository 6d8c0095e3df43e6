"""The cell condition grammar of spec section 7.1, accepted as written: a fault profile with
parameters (`+flaky-writes:seed=3,rate=0.1`) and a rule list (`+lost_response:POST /payment-runs@1`),
in a cell, a `--cells` list and a campaign file; canonical text, safe folder names, the
preflight against a real task pack's profiles, and one local campaign under each form."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from erp_service.faults import parse_fault_spec
from orchestrator.attempt.inputs import check_conditions
from orchestrator.campaign.spec import CampaignSpecError, load_spec_file, spec_from_args, split_cells
from orchestrator.cells import CLEAN, Cell, CellError, condition_slug, parse_cell
from orchestrator.errors import ConfigError
from orchestrator.identity import AttemptIdentity

RULE = "lost_response:POST /payment-runs@1"
TWO_RULES = "lost_response:POST /payment-runs@1,fail_before:POST /payment-runs/*/submit@1"
FLAKY = "flaky-writes:seed=3,rate=0.1"
SAFE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@pytest.mark.parametrize("text, condition", [
    ("oracle:payment-run", CLEAN),
    ("oracle:payment-run+lost-writes", "lost-writes"),
    (f"oracle:payment-run+{FLAKY}", FLAKY),
    (f"oracle:payment-run+{RULE}", RULE),
    (f"neg:blind-retry:payment-run+{TWO_RULES}", TWO_RULES),
    ("oracle:payment-run+flaky-writes:seed=3,rate=0.1,max=2", "flaky-writes:seed=3,rate=0.1,max=2"),
    ("oracle:payment-run+slow:POST /payment-runs@1,delay=130", "slow:POST /payment-runs@1,delay=130"),
    (f"oracle:payment-run+{RULE}#mcp", RULE),
    # written loosely: the same canonical condition
    ("oracle:payment-run+lost_response:POST   /payment-runs@1", RULE),
    ("oracle:payment-run+ lost_response:POST /payment-runs@1 , fail_before:POST /payment-runs/*/submit@1", TWO_RULES),
])
def test_section_7_1_conditions_parse_as_written(text: str, condition: str) -> None:
    cell = parse_cell(text)
    assert cell.condition == condition and cell.task == "payment-run"
    assert parse_cell(cell.text) == cell  # the canonical text round-trips


@pytest.mark.parametrize("text, fragment", [
    ("oracle:payment-run+lost_response:POST /payment-runs@1;rm", "condition"),
    ("oracle:payment-run+lost,,slow", "empty item"),
    ("oracle:payment-run+ ", "no condition"),
    ("oracle :payment-run+lost-writes", "whitespace outside its condition"),
    ("oracle:payment-run+lost-writes# mcp", "interface ' mcp'"),
    ("oracle:payment-run+a+b", "more than one '+'"),
    ("oracle:payment-run+../../etc", "condition"),  # '.' and '/' are fine, but not first
])
def test_conditions_outside_the_grammar_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(CellError) as info:
        parse_cell(text)
    assert fragment in str(info.value)


def test_folder_names_are_safe_and_old_ones_unchanged() -> None:
    # conditions that were always accepted keep their folder names (and so their attempt ids)
    assert condition_slug("lost-writes") == "lost-writes"
    assert condition_slug("lost-writes,slow-reads") == "lost-writes_slow-reads"
    assert parse_cell("null:payment-run+lost-writes").slug == "null__payment-run__lost-writes"
    slugs = {c: condition_slug(c) for c in (RULE, TWO_RULES, FLAKY, RULE.replace("POST", "post"),
                                            "lost_response:POST /payment-runs@2")}
    assert all(SAFE.match(s) for s in slugs.values()), slugs
    assert len(set(slugs.values())) == len(slugs)  # a hash of the text tells them apart
    assert slugs[RULE].startswith("lost-response-post-payme")
    ident = AttemptIdentity(task="payment-run", system="oracle", condition=RULE, seed=0, rep=1, task_version="1")
    assert SAFE.match(ident.attempt_id) and "/" not in ident.attempt_id and " " not in ident.attempt_id


@pytest.mark.parametrize("text, cells", [
    (f"oracle:payment-run+{FLAKY},null:payment-run",
     [f"oracle:payment-run+{FLAKY}", "null:payment-run"]),
    (f"oracle:payment-run+{TWO_RULES},null:payment-run+lost-writes",
     [f"oracle:payment-run+{TWO_RULES}", "null:payment-run+lost-writes"]),
    (f"oracle:payment-run+{RULE},neg:blind-retry:payment-run+{FLAKY}",
     [f"oracle:payment-run+{RULE}", f"neg:blind-retry:payment-run+{FLAKY}"]),
    ("oracle:payment-run+lost-writes,slow-reads,null:payment-run", ["oracle:payment-run+lost-writes,slow-reads", "null:payment-run"]),
    ("oracle:payment-run,null:payment-run", ["oracle:payment-run", "null:payment-run"]),
])
def test_a_cells_list_keeps_commas_inside_conditions(text: str, cells: list[str]) -> None:
    assert split_cells(text) == cells
    assert spec_from_args(text).cells == cells


def test_a_campaign_file_takes_the_conditions_as_written(tmp_path: Path) -> None:
    path = tmp_path / "campaign.yaml"
    path.write_text(
        "cells:\n"
        f"  - 'oracle:payment-run+{FLAKY}'\n"
        "  - 'oracle:payment-run+lost_response:POST  /payment-runs@1'\n"
        f"  - 'null:payment-run+{TWO_RULES}'\n"
        "seeds: [0]\n"
    )
    spec = load_spec_file(path)
    assert spec.cells == [f"oracle:payment-run+{FLAKY}", f"oracle:payment-run+{RULE}", f"null:payment-run+{TWO_RULES}"]
    assert [c.condition for c in spec.cell_refs] == [FLAKY, RULE, TWO_RULES]
    # the same condition written twice is one cell, refused as a duplicate
    path.write_text(f"cells: ['oracle:payment-run+{RULE}', 'oracle:payment-run+lost_response:POST /payment-runs@1 ']\n")
    with pytest.raises(CampaignSpecError, match="duplicate cells"):
        load_spec_file(path)


def test_preflight_reads_each_form_against_the_task_pack() -> None:
    cells = [parse_cell(f"oracle:payment-run+{c}") for c in (FLAKY, RULE, TWO_RULES, "lost-writes")]
    check_conditions(cells)  # a real pack's profiles; raises on any it cannot read
    rules = parse_fault_spec(TWO_RULES)
    assert [(r.kind, r.method, r.pattern, r.nth) for r in rules.rules] == [
        ("lost_response", "POST", "/payment-runs", 1), ("fail_before", "POST", "/payment-runs/*/submit", 1)]
    assert [(p.seed, p.rate) for p in parse_fault_spec(FLAKY).profiles] == [(3, 0.1)]
    for bad in ("lost_response:POST payment-runs@1", "explode:POST /payment-runs@1", "flaky-writes:seed=3,rate=2",
                "no-such-profile"):
        with pytest.raises(ConfigError, match="is not a fault spec"):
            check_conditions([parse_cell(f"oracle:payment-run+{bad}")])


@pytest.mark.heavy  # two real local attempts: ~45 s on this loaded machine (over make test's 20 s)
def test_a_local_campaign_runs_a_rule_list_and_a_parameterised_profile(tmp_path: Path, capsys) -> None:
    """The oracle under a written-out rule and under flaky writes, on the local backend: the rule
    hits the run's creation, the oracle passes both, and the label verifies."""
    from orchestrator.cli import main

    runs = tmp_path / "runs"
    cells = f"oracle:payment-run+{RULE},oracle:payment-run+{FLAKY}"
    rc = main(["campaign", "--backend", "local", "--cells", cells, "--seeds", "0", "--label", "grammar",
               "--runs-root", str(runs)])
    assert rc == 0, capsys.readouterr().err
    lines = [json.loads(t) for t in (runs / "grammar" / "attempts.jsonl").read_text().splitlines()]
    by_condition = {ln["identity"]["condition"]: ln for ln in lines}
    assert set(by_condition) == {RULE, FLAKY}
    assert all(ln["outcome"] == "graded" and ln["passed"] for ln in lines), [(ln["outcome"], ln["checks"]) for ln in lines]
    faults = [json.loads(t) for t in (runs / "grammar" / Cell("oracle", "payment-run", RULE).slug / "seed-0" / "rep-1"
                                      / "faults.jsonl").read_text().splitlines()]
    assert [(f.get("kind"), f.get("path")) for f in faults][:1] == [("lost_response", "/payment-runs")], faults
    assert all(SAFE.match(p.name) for p in (runs / "grammar").iterdir() if p.is_dir())
    summary = json.loads((runs / "grammar" / "summary.json").read_text())
    assert set(summary["totals"]) == {RULE, FLAKY} and summary["comparisons"]["cells"] == []
    assert main(["export", "--verify", "grammar", "--runs-root", str(runs)]) == 0
