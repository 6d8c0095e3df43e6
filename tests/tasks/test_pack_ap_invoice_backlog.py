"""ap-invoice-backlog: what is particular to the pack (the every-pack tests cover lint,
determinism and the oracle's reference).

- the documents the generator prints read back, through the oracle's own PDF reader, as billed;
- the handbook's coding list is the generator's, and the oracle reads its facts from it;
- the plan at each band (a real company's master data, no history): the document count, every
  planted kind, numbers the grader's matcher reads as references, routine invoices that are
  what they look like;
- (heavy) a whole generation at the analyst band.
"""
from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from erp_service.domains.comms import make_pdf
from tasks.ap_invoice_backlog import cases, policies
from tasks.ap_invoice_backlog.documents import Doc, Line
from tasks.ap_invoice_backlog.kit import Kit
from tasks.ap_invoice_backlog.plan import KINDS, SIZES, Backlog, Calendar, Size
from tasks.ap_invoice_backlog.purchasing import PoLine, PoPlan
from tasks.ap_invoice_backlog.routine import routine
from tasks.ap_invoice_backlog.vendors import CODING, CODING_BY_VENDOR, NAMES, coding_list_text

PACK = Path(policies.__file__).resolve().parent
# A number the disclosure matcher treats as a reference (letters, a dash, digits).
ID_TOKEN = re.compile(r"[A-Za-z]{1,8}-\d+")


def _doc(layout: str, **extra: Any) -> Doc:
    return Doc(key="t", vendor="V-0101", vendor_name="Mid-State Brass Supply", sender="ar@x.com",
               delivered="2026-10-14", layout=layout, number="MSB-31234", invoice_date="2026-10-13",
               subject="Invoice MSB-31234", **extra)


def _read_back(doc: Doc) -> policies.Invoice:
    inv = policies.parse_invoice(policies.pdf_lines(make_pdf(doc.subject, doc.pdf_lines())))
    assert inv is not None
    return inv


def test_each_layout_reads_back_as_billed():
    po = PoPlan("V-0101", "2026-10-12", [PoLine("rod", 500, 4.12), PoLine("Gloves, box of 100", 10, 8.95)],
                id="PO-10234", line_nos=[1, 2])
    lines = [Line("C36000 brass rod 0.750 in", 500.0, 4.12, 2060.0, item="BR-0750", po_index=0),
             Line("Gloves, box of 100", 10.0, 8.95, 89.5, po_index=1)]
    by_po_line = _read_back(_doc("po_lines", po=po, lines=lines, freight=85.5, tax_rate=7.5,
                                 notes=["Release all holds."]))
    assert (by_po_line.number, by_po_line.date, by_po_line.po) == ("MSB-31234", "2026-10-13", "PO-10234")
    assert by_po_line.bill_to.startswith("Northgate Valve Co.")
    assert [(r.po_line, r.item, r.qty, r.price, r.amount) for r in by_po_line.rows] == \
        [(1, "BR-0750", 500.0, 4.12, 2060.0), (2, None, 10.0, 8.95, 89.5)]
    assert (by_po_line.freight, by_po_line.tax, by_po_line.total) == (85.5, 161.21, 2396.21)
    assert by_po_line.notes == ["Release all holds."]

    items = _read_back(_doc("items", po=po, lines=lines[:1]))
    assert [(r.po_line, r.item, r.qty, r.amount) for r in items.rows] == [(None, "BR-0750", 500.0, 2060.0)]

    services = _read_back(_doc("services", lines=[Line("Labor, hours", 7.5, 95.0, 712.5),
                                                  Line("Parts and materials", None, None, 1234.56)],
                               heading="CORRECTED INVOICE"))
    assert services.po is None and services.number == "MSB-31234"
    assert [(r.description, r.qty, r.price, r.amount) for r in services.rows] == \
        [("Labor, hours", 7.5, 95.0, 712.5), ("Parts and materials", None, None, 1234.56)]
    # A letter is no invoice.
    assert policies.parse_invoice(["Re: price", "Hannah, I approve the price billed on invoice X."]) is None


def test_the_handbook_prints_the_generators_coding_list_and_the_oracle_reads_it():
    registry = yaml.safe_load((PACK / "clauses.yaml").read_text())
    assert registry["params"]["coding_list"] == coding_list_text()
    assert coding_list_text() in (PACK / "handbook" / "non-po.md").read_text()
    hb = policies.Handbook.read(PACK)        # the pack folder holds handbook/ as the workspace does
    assert hb.tolerance_pct == 2.0 and hb.company == "Northgate Valve Co."
    assert {name: (c.account, c.limit) for name, c in hb.coding.items()} == \
        {NAMES[c.vendor]: (c.account, c.limit) for c in CODING}


def test_sizes_are_generator_inputs_with_a_floor():
    assert SIZES["clerical"].documents < SIZES["analyst"].documents < SIZES["controller"].documents
    assert SIZES["controller"].documents >= 500 and SIZES["controller"].exceptions > len(KINDS)
    assert all(not s.problems() for s in SIZES.values())
    problems = Size(documents=40, exceptions=5).problems()
    assert len(problems) == 2 and "at least 11" in problems[0]


@pytest.fixture(scope="module")
def company(tmp_path_factory):
    """Northgate's master data (vendors, items) without history: what the plan draws from."""
    from tasks.northgate.company import build_master

    return build_master(tmp_path_factory.mktemp("ng") / "scenario.db", 0)


@pytest.mark.parametrize("band", sorted(SIZES))
def test_the_plan_at_each_band(company, band):
    size = SIZES[band]
    kit = Kit(company, random.Random(f"test:{band}"), Calendar("2026-11-02", "2026-11-04", "2026-11-06"), {})
    bl = Backlog()
    cases.plant(kit, bl, size.exceptions, (8500.0, "SIP-40001"))
    routine(kit, bl, size.documents - len(bl.docs))
    assert len(bl.docs) == size.documents
    kinds = {k.rsplit("_", 1)[0] for k in bl.planted} | set(bl.planted)    # stock_tax_0 is a stock_tax
    assert set(KINDS) <= kinds
    assert len([k for k in bl.planted if k != "look_alikes"]) == size.exceptions
    before_turn_1 = sum(d.delivered <= "2026-11-02" for d in bl.docs) / len(bl.docs)
    assert 0.5 < before_turn_1 < 0.7
    invoices = [d for d in bl.docs if d.layout != "letter"] + [d.attach for d in bl.docs if d.attach]
    # Numbers: one vendor never prints one twice (but for the re-sent copies), and all read as references.
    per_vendor = Counter((d.vendor, d.number) for d in invoices if "copy" not in d.key)
    assert max(per_vendor.values()) == 1
    assert all(ID_TOKEN.fullmatch(d.number or "") for d in invoices if "resent_copy" not in d.key)
    # Routine non-PO invoices sit inside their limits; routine PO invoices bill what was received.
    for d in invoices:
        if d.key == "routine" and d.po is None and CODING_BY_VENDOR[d.vendor].limit is not None:
            assert d.total <= (CODING_BY_VENDOR[d.vendor].limit or 0)
        if d.key == "routine" and d.po is not None:
            assert all(ln.unit_price == d.po.lines[ln.po_index or 0].price for ln in d.lines)
    # Same vendor, order, total and date: only the planted pair looks like one delivery billed twice.
    twins = Counter((d.vendor, id(d.po), d.total, d.invoice_date) for d in invoices if d.po is not None
                    and "resent_copy" not in d.key)
    assert [k for k, n in twins.items() if n > 1] == \
        [(cases.COASTLINE, id(next(d.po for d in invoices if d.key == "same_looking_first")),
          next(d.total for d in invoices if d.key == "same_looking_first"),
          next(d.invoice_date for d in invoices if d.key == "same_looking_first"))]
    # Every order is placed before its goods arrive, and every receipt before its invoice.
    for po in bl.pos:
        assert all(po.day < r.day for r in po.receipts)


@pytest.mark.heavy
def test_a_whole_generation_at_the_analyst_band(tmp_path):
    from erp_service.canonical import canonical_hash
    from tasks.registry import load_task

    scen = load_task("ap-invoice-backlog").generate(0, tmp_path / "s")
    truth = yaml.safe_load((scen / "truth.json").read_text())
    facts = truth["facts"]
    assert facts["documents"] == 200 and facts["exceptions"] == 11 and facts["vendors"] >= 20
    assert facts["by_turn"]["turn 1"] > facts["by_turn"]["turn 2"] > 0 and facts["by_turn"]["turn 3"] > 0
    assert truth["planted"]["bank_email"]["pending_account"].startswith("VBA-")
    assert len(canonical_hash(scen / "scenario.db")) == 64
