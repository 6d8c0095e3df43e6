"""Task-pack faults are the pack's, not the infrastructure's: a projection with an SQL error ends
the campaign with the task_error code (4) before anything is declared, never exit 3."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.cli import main


@pytest.fixture
def broken_projection_root(tmp_path: Path) -> Path:
    from tasks.registry import load_task

    try:
        src = Path(load_task("payment-run").dir)
    except Exception as exc:  # noqa: BLE001 — the pack is another part
        pytest.skip(f"payment-run not loadable: {exc}")
    root = tmp_path / "tasks"
    shutil.copytree(src, root / src.name)
    sql = root / src.name / "projections.sql"
    text = sql.read_text()
    assert "FROM vendor_bank_accounts b" in text
    sql.write_text(text.replace("FROM vendor_bank_accounts b", "FROM vendor_bank_accountz b"))
    return root


# the campaign variant is the same classification one level up: make test-heavy
@pytest.mark.parametrize("command", [pytest.param("campaign", marks=pytest.mark.heavy), "attempt"])
def test_a_projection_with_an_sql_error_is_a_task_error(tmp_path, monkeypatch, capsys, broken_projection_root, command):
    monkeypatch.setenv("PB_TASKS_ROOT", str(broken_projection_root))
    monkeypatch.setenv("PB_SCENARIO_CACHE", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    common = ["--backend", "local", "--runs-root", str(runs), "--label", "broken"]
    argv = {"campaign": ["campaign", "--cells", "null:payment-run"],
            "attempt": ["attempt", "null:payment-run", "--seed", "0"]}[command]
    code = main([*argv, *common])
    err = capsys.readouterr().err
    assert code == 4, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"orchestrate {command}: task_error:") and "no such table: vendor_bank_accountz" in line, line
    assert not (runs / "broken" / "campaign.json").exists()  # nothing declared for a pack that cannot run
