"""A person's attempts are never pooled with an agent's, and agents never get the web UI.

`human` (unaided) and `human-assisted` (declared assistance) are systems of their own: their
cells, folders, attempt ids and summary rows are apart from every agent's and from each other's.
The web UI is started only for those systems: an agent or policy cell starts no `web` service.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from campaign_support import declare, write_attempt

from orchestrator.attempt.human_turns import open_human
from orchestrator.campaign.declaration import plan_attempts
from orchestrator.campaign.ledger import build_line
from orchestrator.campaign.summary import compute_summary
from orchestrator.cells import parse_cell
from orchestrator.commands.human import human_cell_text
from orchestrator.config import RuntimeConfig


def test_human_unaided_and_assisted_are_rows_of_their_own(tmp_path: Path) -> None:
    cells = ["oracle:payment-run", human_cell_text("payment-run", False), human_cell_text("payment-run", True)]
    assert cells[1:] == ["human:payment-run", "human-assisted:payment-run"]
    decl = declare(tmp_path, "L", cells, [0], 1)
    planned = plan_attempts([parse_cell(c) for c in cells], [0], 1, {"payment-run": "1"})
    assert len({p.attempt_id for p in planned}) == 3
    assert len({p.folder(tmp_path, "L") for p in planned}) == 3
    lines = []
    passes = {"oracle": True, "human": False, "human-assisted": True}
    for ident in planned:
        line = build_line(ident, write_attempt(tmp_path, "L", ident, passed=passes[ident.system]))
        assert line is not None
        lines.append(line.to_json())
    s = compute_summary(lines, decl)
    assert set(s["cells"]) == set(cells)
    assert [s["cells"][c]["pass_at_1"] for c in cells] == [1.0, 0.0, 1.0]  # each its own rate
    assert [s["cells"][c]["system"] for c in cells] == ["oracle", "human", "human-assisted"]
    assert set(s["systems"]) == {"oracle", "human", "human-assisted"}
    assert all(s["systems"][k]["attempts"] == 1 for k in s["systems"])


class _RecordingSandbox:
    """Fails the test if anything is started on it."""

    def start_service(self, spec: Any) -> Any:
        raise AssertionError(f"service {spec.name!r} started for an agent cell")


def test_the_web_ui_is_started_for_human_cells_only() -> None:
    for text in ("oracle:payment-run", "null:payment-run", "claude-code:payment-run", "oracle:payment-run#mcp"):
        run = SimpleNamespace(spec=SimpleNamespace(cell=parse_cell(text)), sandbox=_RecordingSandbox())
        assert open_human(run) is None, text
    # The control: a human cell does ask the sandbox for the web UI.
    run = SimpleNamespace(spec=SimpleNamespace(cell=parse_cell("human:payment-run")), sandbox=_RecordingSandbox(),
                          resolved=SimpleNamespace(meta={}, turns=[]), agent_token="t", erp=SimpleNamespace(agent_url="http://erp"),
                          scenario=SimpleNamespace(handbook_dir=Path("/nonexistent")), backend=SimpleNamespace(isolation="none"),
                          config=RuntimeConfig.from_env())
    try:
        open_human(run)
    except AssertionError as exc:
        assert "'web' started" in str(exc)
    else:
        raise AssertionError("a human cell started no web UI")
