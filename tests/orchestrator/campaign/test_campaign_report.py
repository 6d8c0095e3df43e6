"""`orchestrate report`: a self-contained HTML file with the section 8 charts (no containers)."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from campaign_support import declare, write_attempt

from orchestrator.campaign.export import export_label, planned_identities
from orchestrator.campaign.progress import summary_table
from orchestrator.cli import main


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.urls = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k == "xmlns":  # a namespace name, never fetched
                continue
            if tag == "a" and k == "href" and v and v.startswith("report_files/"):
                continue  # a link to an attempt page in the same report folder, not an asset
            if k in ("src", "href") or (v and re.match(r"^(https?:)?//", v)):
                self.urls.append((tag, k, v))


def test_report_is_self_contained_and_has_the_charts(tmp_path: Path, capsys):
    decl = declare(tmp_path, "rep", ["oracle:payment-run", "null:payment-run", "oracle:payment-run+lost-writes"], [0, 1], 2)
    for ident in planned_identities(decl):
        write_attempt(tmp_path, "rep", ident, passed=ident.system == "oracle", breach=ident.system == "null" and ident.seed == 1,
                      probes=ident.rep, fault_metrics={"injected": 1} if ident.condition != "clean" else None)
    export_label(tmp_path, "rep")
    assert main(["report", "rep", "--runs-root", str(tmp_path)]) == 0
    path = Path(capsys.readouterr().out.strip())
    text = path.read_text()
    p = _Collect()
    p.feed(text)
    assert p.urls == []  # no external assets
    assert "script" not in p.tags and p.tags.count("svg") == 4  # pass rates (one task), turn times, breaches, probes
    for needle in ("oracle:payment-run+lost-writes", "Wilson 95%", "Turn times", "Breaches", "Probes", "Fault handling",
                   "nearest rank"):
        assert needle in text
    # the Wilson interval of 4/4 shows as a whisker from 51.0% (0.510) to 100%
    assert "4/4" in text


def test_report_without_export_says_what_to_do(tmp_path: Path, capsys):
    (tmp_path / "nothing").mkdir()
    assert main(["report", "nothing", "--runs-root", str(tmp_path)]) == 2
    assert "orchestrate export nothing" in capsys.readouterr().err


def test_summary_table_renders(tmp_path: Path):
    from rich.console import Console

    decl = declare(tmp_path, "t", ["oracle:payment-run"], [0], 1)
    for ident in planned_identities(decl):
        write_attempt(tmp_path, "t", ident)
    console = Console(record=True, width=200)
    console.print(summary_table(export_label(tmp_path, "t")))
    out = console.export_text()
    assert "oracle:payment-run" in out and "100%" in out and "1/1" in out


def test_infra_errors_and_their_causes_stand_next_to_the_pass_rate(tmp_path: Path, capsys):
    """A cell with excluded attempts says so beside its pass rate, with the causes, in the HTML
    report and in the printed summary; a cell without any says every attempt is in the rate."""
    from rich.console import Console

    decl = declare(tmp_path, "inf", ["oracle:payment-run", "null:payment-run"], [0], 3)
    dead = {"phase": "turn", "kind": "infra_error", "exception": "ErpUnhealthy", "message": "service 'erp' died (exit 137)"}
    for ident in planned_identities(decl):
        broken = ident.system == "oracle" and ident.rep > 1
        kw = {"outcome": "infra_error", "passed": False, "error": dead} if broken else {"passed": ident.system == "oracle"}
        write_attempt(tmp_path, "inf", ident, **kw)
    summary = export_label(tmp_path, "inf")
    assert summary["cells"]["oracle:payment-run"]["infra_error_causes"]["excluded"] == [
        {"cause": "ErpUnhealthy in turn: service 'erp' died (exit 137)", "count": 2}]
    assert main(["report", "inf", "--runs-root", str(tmp_path)]) == 0
    text = Path(capsys.readouterr().out.strip()).read_text()
    assert "1/1 of 3 planned (2 excluded)" in text
    assert "<b>oracle:payment-run</b>: 2 attempt(s) left out of the rate as infrastructure errors: ErpUnhealthy in turn" in text
    assert "<b>null:payment-run</b>:" not in text   # nothing excluded there, so nothing said
    console = Console(record=True, width=240)
    console.print(summary_table(summary))
    out = console.export_text()
    assert "(2 excl.)" in out and "infra errors, oracle:payment-run: ErpUnhealthy in turn" in out
