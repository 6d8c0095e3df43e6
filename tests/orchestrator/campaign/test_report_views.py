"""The report's per-check views and attempt pages (issue 21).

From records shaped like real attempts (campaign_support) and from a real local campaign of two
packs with a fault condition (publish_campaign): the summary's `per_check` counts, the heat map
with breaches marked, the cells' interface/condition/isolation, axes that read 0, and every
attempt's page with its checks, projections beside the reference, turns, probes and breaches with
their audit rows, and fault metrics.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from campaign_support import declare, write_attempt

from orchestrator.campaign.export import export_label, planned_identities
from orchestrator.campaign.summary import compute_summary
from orchestrator.report.charts import count_chart, turn_time_chart
from orchestrator.report.label_page import PAGES_DIR, write_report


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "href" and v:
                self.hrefs.append(v)
            if k in ("src",) or (k == "href" and v and re.match(r"^(https?:)?//", v)):
                self.external.append(v or "")


def _synthetic(tmp_path: Path) -> dict:
    decl = declare(tmp_path, "v", ["oracle:payment-run", "null:payment-run", "oracle:payment-run+lost-writes"], [0, 1], 2)
    for ident in planned_identities(decl):
        write_attempt(tmp_path, "v", ident, passed=ident.system == "oracle",
                      breach=ident.system == "null" and ident.seed == 1,
                      fault_metrics={"injected": 1} if ident.condition != "clean" else None)
    return export_label(tmp_path, "v")


def test_summary_per_check_counts_every_check_by_cell(tmp_path: Path) -> None:
    summary = _synthetic(tmp_path)
    view = summary["per_check"]["payment-run"]
    assert view["cells"] == ["oracle:payment-run", "null:payment-run", "oracle:payment-run+lost-writes"]
    checks = {c["name"]: c for c in view["checks"]}
    assert list(checks) == ["paid_right_invoices", "no_duplicate_payment"]  # the grader's order
    paid = checks["paid_right_invoices"]["cells"]
    counts = {"planned": 4, "scored": 4, "excluded": 0}
    assert paid["oracle:payment-run"] == {**counts, "passed": 4, "failed": 0, "rate": 1.0, "breaches": 0}
    assert paid["null:payment-run"] == {**counts, "passed": 0, "failed": 4, "rate": 0.0, "breaches": 0}
    dup = checks["no_duplicate_payment"]["cells"]["null:payment-run"]
    assert dup == {**counts, "passed": 2, "failed": 2, "rate": 0.5, "breaches": 2}  # seed 1, both reps
    cell = summary["cells"]["oracle:payment-run+lost-writes"]
    assert (cell["interface"], cell["condition"], cell["isolation"]) == ("cli", "lost-writes", ["none"])
    # the summary stays a pure function of the ledger: verify recomputes it to the same bytes
    lines = [json.loads(t) for t in (tmp_path / "v" / "attempts.jsonl").read_text().splitlines()]
    decl = json.loads((tmp_path / "v" / "campaign.json").read_text())
    assert compute_summary(lines, decl)["per_check"] == summary["per_check"]


def test_report_shows_the_heat_map_cells_and_links_every_attempt(tmp_path: Path) -> None:
    _synthetic(tmp_path)
    index = write_report(tmp_path, "v")
    text = index.read_text()
    assert "Per check: which judgment separates the systems" in text
    heat = text[text.index("<table class='heat'>"):]
    heat = heat[: heat.index("</table>")]
    assert "no_duplicate_payment" in heat and "2 breaches" in heat and "class='h breach'" in heat
    assert "50.0%<small>2/4</small>" in heat and "<td>&#8656;</td>" in heat  # a check that separates the cells
    cells = text[text.index("<h2>Cells</h2>"):]
    assert re.search(r"oracle:payment-run\+lost-writes</td>.*?<td class='l'>cli</td><td class='l'>lost-writes</td>"
                     r"<td class='l'>none</td>", cells)
    links = _Links()
    links.feed(text)
    assert links.external == []
    pages = [h for h in links.hrefs if h.startswith(PAGES_DIR + "/")]
    assert len(pages) == 12 and all((index.parent / h).is_file() for h in pages)
    page = (index.parent / pages[0]).read_text()
    assert "href='../report.html'" in page and "Checks (" in page and "Turns" in page


def test_zero_axes_read_zero() -> None:
    svg = count_chart([("a", 0.0, "0 total"), ("b", None, "-")], title="probes", colour="#000")
    assert "e-10" not in svg and ">0</text>" in svg
    assert "e-" not in turn_time_chart([("a", [])])


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    from publish_campaign import campaign

    c = campaign(tmp_path_factory)
    out = tmp_path_factory.mktemp("report") / "report.html"
    write_report(c.runs, c.label, out)
    return c, out


def _page(out: Path, cell_dir: str) -> str:
    [page] = [p for p in (out.parent / PAGES_DIR).glob("*.html") if p.name.startswith(cell_dir + ".")]
    return page.read_text()


def test_real_campaign_report_has_per_check_views_for_both_tasks(real) -> None:
    _c, out = real
    text = out.read_text()
    assert "id='checks-payment-run'" in text and "id='checks-payment-run-need-to-know'" in text
    need = text[text.index("id='checks-payment-run-need-to-know'"):]
    row = need[need.index("no restricted data disclosed"):]
    row = row[: row.index("</tr>")]
    assert "class='h breach'" in row and "0.0%<small>0/1</small>" in row  # the negative control's breach
    assert len(list((out.parent / PAGES_DIR).glob("*.html"))) == 7


def test_attempt_page_of_the_fault_negative_control(real) -> None:
    _c, out = real
    page = _page(out, "neg-blind-retry__payment-run__lost-writes")
    assert "FAIL (breach)" in page and "lost-writes" in page
    breaches = page[page.index("<h2>Breaches"):page.index("<h2>Probes")]
    assert "duplicate_effect" in breaches and "POST" in breaches and "/payment-runs" in breaches
    assert breaches.count("<tr>") >= 3  # a header and the two audit rows that committed twice
    probes = page[page.index("<h2>Probes"):page.index("<h2>Fault metrics")]
    assert "refused" in probes and "409" in probes
    faults = page[page.index("<h2>Fault metrics"):]
    assert "faults_injected" in faults and "lost_response" in faults
    turns = page[page.index("<h2>Turns"):page.index("<h2>Breaches")]
    assert re.search(r"<td>1</td><td>2026-10-08</td><td>0</td><td>no</td><td>\d+\.\d\ds</td>", turns)


def test_attempt_page_shows_projection_beside_reference_for_failed_state_checks(real) -> None:
    _c, out = real
    page = _page(out, "null__payment-run")
    section = page[page.index("Failed state checks"):page.index("<h2>Turns")]
    assert "agent: run_payments" in section and "reference: run_payments" in section
    assert "class='diff'" in section  # the reference's rows the null policy never produced
