"""The interface is part of the cell (issue 17): the same system on `cli` and `mcp` cells is two
attempts with two folders and ids, and the summary reports them as two rows, never pooled; the
HTML report and the table `orchestrate campaign` prints show the two rows with their interface
(from a ledger; and, heavy, from a real local campaign of the oracle on both interfaces)."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from campaign_support import declare, write_attempt
from rich.console import Console

from orchestrator.campaign.declaration import plan_attempts
from orchestrator.campaign.export import export_label
from orchestrator.campaign.ledger import build_line
from orchestrator.campaign.progress import summary_table
from orchestrator.campaign.summary import compute_summary
from orchestrator.cells import parse_cell
from orchestrator.cli import main
from orchestrator.identity import AttemptIdentity


def test_cli_and_mcp_cells_are_two_rows(tmp_path: Path) -> None:
    cells = ["oracle:payment-run", "oracle:payment-run#mcp"]
    decl = declare(tmp_path, "L", cells, [0], 1)
    planned = plan_attempts([parse_cell(c) for c in cells], [0], 1, {"payment-run": "1"})
    assert [p.interface for p in planned] == ["cli", "mcp"]
    cli, mcp = planned
    assert cli.attempt_id != mcp.attempt_id and cli.folder(tmp_path, "L") != mcp.folder(tmp_path, "L")
    assert "interface" not in cli.as_dict() and mcp.as_dict()["interface"] == "mcp"  # cli ids as before
    assert cli.attempt_id == AttemptIdentity(task="payment-run", system="oracle", condition="clean", seed=0, rep=1, task_version="1").attempt_id
    lines = []
    for ident, passed in ((cli, True), (mcp, False)):
        line = build_line(ident, write_attempt(tmp_path, "L", ident, passed=passed))
        assert line is not None
        lines.append(line.to_json())
    s = compute_summary(lines, decl)
    assert set(s["cells"]) == set(cells)
    assert s["cells"]["oracle:payment-run"]["pass_at_1"] == 1.0
    assert s["cells"]["oracle:payment-run#mcp"]["pass_at_1"] == 0.0
    assert s["cells"]["oracle:payment-run#mcp"]["interface"] == "mcp"
    assert s["cells"]["oracle:payment-run"]["interface"] == "cli"
    assert set(s["systems"]) == {"oracle", "oracle#mcp"}
    assert s["matrix"] == {"planned": 2, "present": 2, "complete": True}


# --- what the operator sees: the HTML report and the printed table ------------------------------

CELLS = ["oracle:payment-run", "oracle:payment-run#mcp"]


def report_cell_rows(html: str) -> list[tuple[str, str, str, str]]:
    """(cell, system, task, interface) of each row of the report's Cells table."""
    section = html[html.index("<h2>Cells</h2>"):]
    section = section[: section.index("</table>")]
    return re.findall(r"<tr><td>([^<]*)</td><td class='l'>([^<]*)</td><td class='l'>([^<]*)</td>"
                      r"<td class='l'>([^<]*)</td>", section)


def printed_rows(text: str) -> list[str]:
    """The first column of each body row of the printed summary table (the first table printed;
    the paired comparisons follow it)."""
    first = text.split("└", 1)[0]
    cells = [line.split("│")[1].strip() for line in first.splitlines() if line.startswith("│")]
    return [c for c in cells if c]  # a blank first column continues the row above (a wrapped value)


def assert_two_interface_rows(runs: Path, label: str, printed: str) -> None:
    """summary.json, report.html and the printed table each show the cli and the mcp cell apart."""
    summary = json.loads((runs / label / "summary.json").read_text())
    assert {name: c["interface"] for name, c in summary["cells"].items()} == {CELLS[0]: "cli", CELLS[1]: "mcp"}
    assert all(c["attempts"] == 1 for c in summary["cells"].values())
    assert main(["report", label, "--runs-root", str(runs)]) == 0
    rows = report_cell_rows((runs / label / "report.html").read_text())
    assert rows == [(CELLS[0], "oracle", "payment-run", "cli"), (CELLS[1], "oracle", "payment-run", "mcp")], rows
    # The printed table names the cell; an mcp cell carries its interface (`#mcp`), cli is the default.
    assert printed_rows(printed) == CELLS, printed


def test_report_and_printed_table_show_a_cli_and_an_mcp_row(tmp_path: Path) -> None:
    """The report and the printed table rendered from a ledger (attempt folders in the shape a
    real attempt leaves, exported like a campaign's): one row per interface."""
    declare(tmp_path, "L", CELLS, [0], 1)
    for ident in plan_attempts([parse_cell(c) for c in CELLS], [0], 1, {"payment-run": "1"}):
        write_attempt(tmp_path, "L", ident, passed=ident.interface == "cli")
    summary = export_label(tmp_path, "L")
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(summary_table(summary))
    assert_two_interface_rows(tmp_path, "L", console.export_text())


@pytest.mark.heavy  # two real attempts, one through the MCP server: 31-42 s here (over make test's 20 s)
def test_a_local_campaign_on_a_cli_and_an_mcp_cell_is_two_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`orchestrate campaign` of the oracle on payment-run seed 0, `cli` and `mcp` cells, on the
    local backend (a real ERP, the real MCP server, the oracle through a real MCP client)."""
    runs = tmp_path / "runs"
    rc = main(["campaign", "--backend", "local", "--cells", ",".join(CELLS), "--seeds", "0", "--label", "ifc",
               "--runs-root", str(runs)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    lines = [json.loads(t) for t in (runs / "ifc" / "attempts.jsonl").read_text().splitlines()]
    assert [(ln["identity"].get("interface", "cli"), ln["outcome"], ln["passed"]) for ln in lines] == \
        [("cli", "graded", True), ("mcp", "graded", True)]
    for ln in lines:  # the interface is in the attempt's own records
        ident = AttemptIdentity.from_dict(ln["identity"])
        folder = ident.folder(runs, "ifc")
        for name in ("attempt.json", "result.json"):
            assert json.loads((folder / name).read_text())["interface"] == ident.interface, (folder, name)
    assert_two_interface_rows(runs, "ifc", printed)
