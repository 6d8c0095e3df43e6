"""Every bad input of `attempt` and `campaign` is refused before anything is prepared or written.

The engine is dead in these tests (DOCKER_HOST at a socket nobody listens on): an input check
that ran after the engine would show as exit 3 (engine_unavailable) instead of 2 (bad_input).
"""
from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import pytest
import yaml
from repo_paths import REPO_ROOT
from rich.console import Console

from orchestrator.campaign.declaration import build_declaration, write_declaration
from orchestrator.campaign.spec import MAX_INFRA_RETRIES, CampaignSpecError, spec_from_args, split_cells
from orchestrator.cells import parse_cell
from orchestrator.cli import main

REPO = REPO_ROOT


@pytest.fixture(autouse=True)
def dead_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'nobody.sock'}")


@pytest.fixture
def pack() -> None:
    """The payment-run pack must load (it belongs to another part; skip while it is broken)."""
    from tasks.registry import load_task

    try:
        load_task("payment-run")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"payment-run not loadable: {exc}")


def _nothing_written(root: Path) -> bool:
    return not root.exists() or not any(root.rglob("*"))


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "0", "-5", "1e9"])
def test_non_finite_or_absurd_timeout_is_refused(tmp_path, capsys, value):
    runs = tmp_path / "runs"
    assert main(["campaign", "--cells", "null:payment-run", f"--timeout={value}", "--runs-root", str(runs)]) == 2
    assert "--timeout" in capsys.readouterr().err
    assert main(["attempt", "null:payment-run", "--seed", "0", f"--timeout={value}", "--runs-root", str(runs)]) == 2
    assert "--timeout" in capsys.readouterr().err
    assert _nothing_written(runs)


def test_timeout_in_a_campaign_file_is_checked_too(tmp_path, capsys):
    f = tmp_path / "c.yaml"
    f.write_text("cells: [null:payment-run]\nbudgets: {turn_s: .inf}\n")
    assert main(["campaign", "--cells", str(f), "--runs-root", str(tmp_path / "runs")]) == 2
    assert "turn_s" in capsys.readouterr().err


def test_retries_past_the_documented_maximum_are_refused(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["campaign", "--cells", "null:payment-run", "--retries", "99", "--runs-root", str(runs)]) == 2
    assert f"--retries: 99: must be between 0 and {MAX_INFRA_RETRIES}" in capsys.readouterr().err
    assert _nothing_written(runs)
    spec = spec_from_args("null:payment-run", retries=MAX_INFRA_RETRIES)
    assert spec.budgets.infra_retries == MAX_INFRA_RETRIES
    with pytest.raises(CampaignSpecError):
        spec_from_args("null:payment-run", retries=MAX_INFRA_RETRIES + 1)


@pytest.mark.parametrize("label", ["../x", "a/b", ".hidden", "/abs", ""])
def test_attempt_refuses_a_label_that_is_not_one_folder_name(tmp_path, capsys, label):
    runs = tmp_path / "runs"
    runs.mkdir()
    assert main(["attempt", "null:payment-run", "--seed", "0", "--label", label, "--runs-root", str(runs)]) == 2
    assert "--label" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"] and not any(runs.iterdir())
    assert main(["campaign", "--cells", "null:payment-run", "--label", label, "--runs-root", str(runs)]) == 2


def test_a_cell_list_longer_than_a_file_name_is_a_cell_list():
    # Six tasks' oracle and null cells exceed the OS's 255-byte name limit: asking whether that
    # "file" exists raised ENAMETOOLONG, and the campaign ended as an infrastructure error.
    tasks = ["payment-run", "requisition-approval-queue", "procure-to-pay-week", "mrp-planner-week",
             "month-end-close", "margin-bridge"]
    text = ",".join(f"{system}:{task}" for task in tasks for system in ("oracle", "null"))
    assert len(text) > 255
    spec = spec_from_args(text)
    assert spec.cells == text.split(",")


def test_commas_inside_a_condition_stay_in_the_cell():
    text = "oracle:payment-run+lost-writes,flaky-writes,seed=3,null:payment-run,neg:skip-check:payment-run+lost-writes"
    assert split_cells(text) == [
        "oracle:payment-run+lost-writes,flaky-writes,seed=3",
        "null:payment-run",
        "neg:skip-check:payment-run+lost-writes",
    ]
    spec = spec_from_args("oracle:payment-run+lost-writes,flaky-writes,null:payment-run")
    assert spec.cells == ["oracle:payment-run+lost-writes,flaky-writes", "null:payment-run"]
    assert [c.condition for c in spec.cell_refs] == ["lost-writes,flaky-writes", "clean"]


def test_a_combined_condition_passes_the_checks_and_reaches_the_engine(tmp_path, capsys, pack):
    runs = tmp_path / "runs"
    code = main(["campaign", "--cells", "oracle:payment-run+lost-writes,flaky-writes,null:payment-run",
                 "--runs-root", str(runs), "--label", "combo"])
    err = capsys.readouterr().err
    assert code == 3 and "engine_unavailable" in err, err  # past every input check
    assert "malformed" not in err and "no ':'" not in err
    assert not (runs / "combo" / "campaign.json").exists()  # not declared: the engine never answered


def test_unknown_condition_is_refused_before_the_engine_with_its_text_intact(tmp_path, capsys, pack):
    runs = tmp_path / "runs"
    for argv in (["campaign", "--cells", "oracle:payment-run+no-such-profile"],
                 ["attempt", "oracle:payment-run+no-such-profile", "--seed", "0"]):
        assert main([*argv, "--runs-root", str(runs)]) == 2
        err = capsys.readouterr().err
        assert "no-such-profile" in err and "lost-writes" in err  # names the task's profiles
        assert "/path[@n]" in err  # rich markup did not swallow the fault grammar
    assert _nothing_written(runs)


def test_messages_are_printed_verbatim():
    from orchestrator.commands.campaign import error

    buf = io.StringIO()
    error(Console(file=buf, width=300), "expected KIND:METHOD /path[@n] or [bold]x[/bold]")
    assert buf.getvalue().strip() == (
        "orchestrate campaign: bad_input: expected KIND:METHOD /path[@n] or [bold]x[/bold]"
    )


def _broken_pack_root(tmp_path: Path) -> Path:
    from tasks.registry import load_task

    src = Path(load_task("payment-run").dir)
    root = tmp_path / "tasks"
    shutil.copytree(src, root / src.name)
    task_file = root / src.name / "task.yaml"
    data = yaml.safe_load(task_file.read_text())
    data["checks"][0]["cites"] = [*data["checks"][0]["cites"], "VEN-9.9"]
    task_file.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def test_a_check_citing_a_missing_clause_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch, pack):
    monkeypatch.setenv("PB_TASKS_ROOT", str(_broken_pack_root(tmp_path)))
    runs = tmp_path / "runs"
    for argv in (["campaign", "--cells", "null:payment-run"], ["attempt", "null:payment-run", "--seed", "0"]):
        assert main([*argv, "--runs-root", str(runs)]) == 2
        err = capsys.readouterr().err
        assert "handbook lint" in err and "VEN-9.9" in err, err
    assert _nothing_written(runs)


def test_a_label_holding_another_campaign_is_refused_before_the_engine(tmp_path, capsys, pack):
    runs = tmp_path / "runs"
    argv = ["campaign", "--runs-root", str(runs), "--label", "lab"]
    assert main([*argv, "--cells", "null:payment-run"]) == 3  # engine dead: nothing declared
    assert not (runs / "lab" / "campaign.json").exists()
    other = build_declaration(label="lab", cells=[parse_cell("null:payment-run")], seeds=[9], reps=1,
                              task_info={"payment-run": {"version": "1", "tree_sha256": "t"}},
                              systems={"null": {"kind": "policy"}}, turn_timeout_s=None, backend="docker", volatile={})
    write_declaration(runs / "lab", other)  # another campaign (seed 9) under the label
    capsys.readouterr()
    assert main([*argv, "--cells", "null:payment-run"]) == 2
    assert "already holds a different campaign" in capsys.readouterr().err


def _strict_json(text: str) -> object:
    def refuse(name: str) -> float:
        raise ValueError(f"non-JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_export_never_crashes_on_an_infinity_in_campaign_json(tmp_path, capsys):
    label = tmp_path / "old"
    label.mkdir()
    declaration = {
        "schema": 1, "label": "old", "seeds": [0], "reps": 1, "backend": "local", "isolation": "none",
        "cells": [{"cell": "null:payment-run", "system": "null", "task": "payment-run", "condition": "clean"}],
        "conditions": ["clean"], "tasks": {"payment-run": {"version": "1"}}, "systems": {},
        "timeouts": {"turn_s": math.inf}, "volatile": {},
    }
    (label / "campaign.json").write_text(json.dumps(declaration))  # an older run's `Infinity`
    assert "Infinity" in (label / "campaign.json").read_text()
    assert main(["export", "old", "--runs-root", str(tmp_path)]) == 0
    for name in ("summary.json", "provenance.json"):
        _strict_json((label / name).read_text())
    code = main(["export", "--verify", "old", "--runs-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "matrix incomplete" in err and "Traceback" not in err  # a finding, not a crash


def test_progress_lines_keep_brackets_and_say_interrupted():
    from orchestrator.campaign.progress import CampaignProgress
    from orchestrator.campaign.scheduler import AttemptEvent
    from orchestrator.identity import AttemptIdentity

    buf = io.StringIO()
    progress = CampaignProgress(2, label="l", concurrency=1, console=Console(file=buf, width=300))
    ident = AttemptIdentity(task="payment-run", system="oracle", condition="clean", seed=0, rep=1, task_version="1")
    progress.handle(AttemptEvent("started", ident))
    progress.handle(AttemptEvent("retry", ident, "infra_error", error="cannot parse fault item 'x': /path[@n]"))
    progress.handle(AttemptEvent("started", ident))
    progress.handle(AttemptEvent("finished", ident, "infra_error", error="turn: cancelled by the caller"))
    out = buf.getvalue()
    assert "/path[@n]" in out
    assert "INTERRUPTED" in out and "INFRA_ERROR" not in out


def test_systems_are_checked_before_the_engine(tmp_path, capsys, pack):
    runs = tmp_path / "runs"
    good = tmp_path / "systems.yaml"
    good.write_text("systems:\n  sleeper:\n    argv: [sleep, '1']\n    mounts: ['./missing:/opt/x']\n")
    cases = [
        (["--systems", str(tmp_path / "nope.yaml")], "nope.yaml"),
        (["--systems", str(good)], "mount"),
        ([], "need a systems file"),
    ]
    for extra, needle in cases:
        for argv in (["campaign", "--cells", "sleeper:payment-run"], ["attempt", "sleeper:payment-run", "--seed", "0"]):
            assert main([*argv, *extra, "--runs-root", str(runs)]) == 2, (argv, extra)
            err = capsys.readouterr().err
            assert needle in err, err
    good.write_text("systems:\n  other:\n    argv: [sleep, '1']\n")
    assert main(["attempt", "sleeper:payment-run", "--seed", "0", "--systems", str(good), "--runs-root", str(runs)]) == 2
    assert "'sleeper' is not defined" in capsys.readouterr().err
    assert _nothing_written(runs)
