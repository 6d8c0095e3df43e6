"""`orchestrate campaign` input errors: clear messages and exit 2, before anything runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import main


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--cells", "oracle"], "no ':' between system and task"),
        (["--cells", "oracle:no-such-task"], "no-such-task"),
        (["--cells", "oracle:payment-run", "--seeds", "a"], "--seeds"),
        (["--cells", "oracle:payment-run", "--reps", "0"], "reps"),
        (["--cells", "oracle:payment-run", "--retries", "-1"], "--retries"),
    ],
)
def test_bad_input_exits_2_with_the_reason(tmp_path: Path, capsys, argv, needle):
    assert main(["campaign", "--backend", "local", "--runs-root", str(tmp_path), *argv]) == 2
    assert needle in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing declared, nothing run


def test_yaml_with_unknown_field_is_refused(tmp_path: Path, capsys):
    f = tmp_path / "c.yaml"
    f.write_text("cells: [oracle:payment-run]\nrepetitions: 3\n")
    assert main(["campaign", "--cells", str(f), "--runs-root", str(tmp_path / "runs")]) == 2
    assert "repetitions: unknown field" in capsys.readouterr().err


def test_export_and_verify_of_a_missing_label(tmp_path: Path, capsys):
    assert main(["export", "nope", "--runs-root", str(tmp_path)]) == 2
    assert main(["export", "--verify", "nope", "--runs-root", str(tmp_path)]) == 2
    assert "no campaign 'nope'" in capsys.readouterr().err


def test_undeclared_negative_control_is_refused(tmp_path: Path, capsys):
    from tasks.registry import load_task

    try:
        load_task("payment-run")
    except Exception as exc:  # noqa: BLE001 — the pack is another part
        pytest.skip(f"payment-run not loadable: {exc}")
    argv = ["campaign", "--backend", "local", "--runs-root", str(tmp_path)]
    assert main(argv + ["--cells", "neg:no-such-control:payment-run"]) == 2
    assert "declares no negative control" in capsys.readouterr().err
    # blind-retry belongs to the lost-writes profile, not to the clean condition
    assert main(argv + ["--cells", "neg:blind-retry:payment-run"]) == 2
    assert "neg:blind-retry" in capsys.readouterr().err
