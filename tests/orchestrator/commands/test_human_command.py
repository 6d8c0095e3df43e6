"""`orchestrate human`: the human cells and the command's refusals of bad input."""
from __future__ import annotations

import subprocess
import sys

from orchestrator.cells import parse_cell
from orchestrator.commands.human import human_cell_text


def test_human_cells_are_their_own_systems() -> None:
    unaided, assisted = parse_cell(human_cell_text("payment-run", False)), parse_cell(human_cell_text("payment-run", True))
    assert (unaided.system, assisted.system) == ("human", "human-assisted")
    assert unaided.is_human and assisted.is_human and not parse_cell("oracle:payment-run").is_human
    assert unaided.slug != parse_cell("oracle:payment-run").slug  # never the same folder or pool as an agent's


def _human(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", "human", *args], capture_output=True, text=True, timeout=120)


def test_a_cell_instead_of_a_task_is_bad_input() -> None:
    done = _human("oracle:payment-run", "--seed", "0", "--label", "x")
    assert done.returncode == 2
    assert "not a cell" in done.stderr


def test_an_unknown_task_is_bad_input() -> None:
    done = _human("no-such-task", "--seed", "0", "--label", "x")
    assert done.returncode == 2, done.stderr
    assert "no-such-task" in done.stderr
