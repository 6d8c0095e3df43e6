"""procure-to-pay-week: the oracle reads what the vendors write (packing slips and invoices from
the ERP's own vendor counterparty text), the handbook numbers it parses, and the pack's spec."""
from __future__ import annotations

from pathlib import Path

from erp_service.domains.purchasing.actors import invoice_text, slip_text
from tasks.procure_to_pay_week import policies as p
from tasks.registry import load_task

PACK = Path(p.__file__).resolve().parent


def test_packing_slip_text_parses_back():
    lines = [
        {"po_line": 1, "item_id": "FAST-NUT", "ordered_item": "FAST-NUT", "qty": 2100.0, "lots": [],
         "substitution": False},
        {"po_line": 3, "item_id": "ORING-02", "ordered_item": "SEAL-020", "qty": 500.0, "substitution": True,
         "lots": [{"lot": "CS12345", "expiry": "2028-03-10", "qty": 300.0},
                  {"lot": "CS12346", "expiry": "2026-11-21", "qty": 200.0}]},
    ]
    text = "\n".join(slip_text("PS-PO-10001-20261007", "V-0105", "PO-10001", "2026-10-07", lines))
    slip = p.parse_slip(text)
    assert slip["slip"] == "PS-PO-10001-20261007" and slip["po"] == "PO-10001"
    assert slip["lines"][0] == {"po_line": 1, "item": "FAST-NUT", "qty": 2100.0, "substitute_for": None, "lots": []}
    sub = slip["lines"][1]
    assert sub["item"] == "ORING-02" and sub["substitute_for"] == "SEAL-020" and sub["qty"] == 500.0
    assert sub["lots"] == [{"lot": "CS12345", "expiry": "2028-03-10", "qty": 300.0},
                           {"lot": "CS12346", "expiry": "2026-11-21", "qty": 200.0}]


def test_invoice_text_parses_back():
    inv = {"invoice_no": "KF-54869", "invoice_date": "2026-10-08", "po_id": "PO-10004", "freight": 64.0,
           "total": 421.0, "lines": [{"po_line": 1, "item_id": "FAST-NUT", "qty": 2100.0, "unit_price": 0.17,
                                      "amount": 357.0}]}
    got = p.parse_invoice("\n".join(invoice_text("V-0104", inv)))
    assert got == {"invoice_no": "KF-54869", "vendor": "V-0104", "date": "2026-10-08", "po": "PO-10004",
                   "freight": 64.0, "lines": [{"po_line": 1, "item": "FAST-NUT", "qty": 2100.0, "unit_price": 0.17}]}
    # No freight line: freight is zero.
    assert p.parse_invoice("\n".join(invoice_text("V-0104", {**inv, "freight": 0})))["freight"] == 0.0


def test_duplicate_numbers_and_quantities():
    assert p.norm_no("AIF-7879 4") == p.norm_no("aif/78794") == "AIF78794"
    assert p.norm_no("AIF-78794") != p.norm_no("AIF-78795")
    assert p._round_up(60, 100, 50) == 100 and p._round_up(260, 250, 50) == 300 and p._round_up(550, 100, 50) == 550
    # Monday 5 Oct 2026 plus 15 working days, with Columbus Day not a company holiday; a holiday pushes it.
    assert p.add_workdays("2026-10-05", 15, set()) == "2026-10-26"
    assert p.add_workdays("2026-10-05", 15, {"2026-10-12"}) == "2026-10-27"


def test_handbook_numbers_the_oracle_reads():
    ws = PACK  # the pack folder holds handbook/ as the workspace does
    assert p.handbook_number(ws, "RCV-1.2", r"up to ([\d.]+)%") == 2.0
    assert p.handbook_number(ws, "RCV-1.3", r"less than (\d+) days") == 180.0


def test_spec_every_negative_control_has_a_policy_and_cites_exist():
    pack = load_task("procure-to-pay-week")
    names = set(p.POLICIES)
    assert {"oracle", "neg:blind-retry"} <= names
    assert set(pack.spec.negative_controls) <= names
    handbook = "".join(f.read_text() for f in (PACK / "handbook").glob("*.md"))
    for check in pack.spec.checks:
        assert check.cites, check.name
        assert all(f"**{c}**" in handbook for c in check.cites), check.name
