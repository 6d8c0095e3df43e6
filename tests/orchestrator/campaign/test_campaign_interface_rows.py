"""The interface is part of the cell (issue 17): the same system on `cli` and `mcp` cells is two
attempts with two folders and ids, and the summary reports them as two rows, never pooled."""
from __future__ import annotations

from pathlib import Path

from campaign_support import declare, write_attempt

from orchestrator.campaign.identity import AttemptIdentity, attempt_dir, plan_attempts
from orchestrator.campaign.ledger import build_line
from orchestrator.campaign.summary import compute_summary
from orchestrator.cells import parse_cell


def test_cli_and_mcp_cells_are_two_rows(tmp_path: Path) -> None:
    cells = ["oracle:payment-run", "oracle:payment-run#mcp"]
    decl = declare(tmp_path, "L", cells, [0], 1)
    planned = plan_attempts([parse_cell(c) for c in cells], [0], 1, {"payment-run": "1"})
    assert [p.interface for p in planned] == ["cli", "mcp"]
    cli, mcp = planned
    assert cli.attempt_id != mcp.attempt_id and attempt_dir(tmp_path, "L", cli) != attempt_dir(tmp_path, "L", mcp)
    assert "interface" not in cli.as_dict() and mcp.as_dict()["interface"] == "mcp"  # cli ids as before
    assert cli.attempt_id == AttemptIdentity("payment-run", "oracle", "clean", 0, 1, "1").attempt_id
    lines = []
    for ident, passed in ((cli, True), (mcp, False)):
        line = build_line(ident, write_attempt(tmp_path, "L", ident, passed=passed))
        assert line is not None
        lines.append(line)
    s = compute_summary(lines, decl)
    assert set(s["cells"]) == set(cells)
    assert s["cells"]["oracle:payment-run"]["pass_at_1"] == 1.0
    assert s["cells"]["oracle:payment-run#mcp"]["pass_at_1"] == 0.0
    assert s["cells"]["oracle:payment-run#mcp"]["interface"] == "mcp"
    assert s["cells"]["oracle:payment-run"]["interface"] == "cli"
    assert set(s["systems"]) == {"oracle", "oracle#mcp"}
    assert s["matrix"] == {"planned": 2, "present": 2, "complete": True}
