"""procure-to-pay-week's projections ask no more than the handbook (issue 41, item 3).

RCV-1.1 asks for every refused quantity with its reason, not for the id of what was sent back;
AP-1.1/AP-1.2 ask for the PO line, quantities and prices as billed, not for the vendor's item
code. Table tests both ways on a real SQLite database built from the ERP's own schema rows the
projections read: entries the handbook allows, written differently, project alike; entries
that break a clause project differently."""
from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from orchestrator.grading.projections import run_projection
from tasks.registry import load_task

START = {"start": "2026-10-05"}
SCHEMA = """
CREATE TABLE vendors (id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE receipts (id TEXT PRIMARY KEY, vendor_id TEXT, received_on TEXT, status TEXT);
CREATE TABLE receipt_lines (receipt_id TEXT, line_no INTEGER, po_line INTEGER, ordered_item_id TEXT,
    item_id TEXT, qty_received REAL, qty_refused REAL, refusal_reason TEXT, lot_no TEXT);
CREATE TABLE po_lines (po_id TEXT, line_no INTEGER, item_id TEXT);
CREATE TABLE ap_invoices (id TEXT PRIMARY KEY, vendor_id TEXT, invoice_no TEXT, created_on TEXT, status TEXT,
    po_id TEXT);
CREATE TABLE ap_invoice_lines (invoice_id TEXT, line_no INTEGER, kind TEXT, po_line INTEGER, item_id TEXT,
    qty REAL, unit_price REAL, amount_cents INTEGER);
INSERT INTO vendors VALUES ('V-0105', 'Coastline Seals & Gaskets');
INSERT INTO po_lines VALUES ('PO-1', 1, 'SEAL-020'), ('PO-1', 2, 'SEAL-030'), ('PO-1', 3, 'FAST-NUT');
"""
# (ordered, arriving item or None, received, refused, reason, lot): one receipt line each.
Line = tuple[str, Any, float, float, Any, Any]


def project(name: str, receipt: list[Line] = (), invoice: list[tuple[Any, ...]] = ()) -> list[dict[str, str]]:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    for n, (ordered, item, rec, ref, reason, lot) in enumerate(receipt, 1):
        # Each line its own receipt: how many receipts a delivery is split into must not matter.
        conn.execute("INSERT INTO receipts VALUES (?, 'V-0105', '2026-10-07', 'posted')", (f"R{n}",))
        conn.execute("INSERT INTO receipt_lines VALUES (?, 1, 1, ?, ?, ?, ?, ?, ?)",
                     (f"R{n}", ordered, item, rec, ref, reason, lot))
    conn.execute("INSERT INTO ap_invoices VALUES ('I1', 'V-0105', 'CSG-1', '2026-10-09', 'on_hold', 'PO-1')")
    for n, (kind, po_line, item, qty, price, cents) in enumerate(invoice, 1):
        conn.execute("INSERT INTO ap_invoice_lines VALUES ('I1', ?, ?, ?, ?, ?, ?, ?)",
                     (n, kind, po_line, item, qty, price, cents))
    table = run_projection(conn, load_task("procure-to-pay-week").projections[name], START)
    return sorted(table.rows, key=lambda r: sorted(r.items()))


# The oracle's wrong-item refusal (arriving item recorded) and the same refusal written other ways.
WRONG_ITEM: list[Line] = [("SEAL-030", "ORING-03", 0, 500, "wrong_item", None)]
WRONG_ITEM_SAME = {
    "arriving item not recorded": [("SEAL-030", None, 0, 500, "wrong_item", None)],
    "arriving item recorded as the ordered one": [("SEAL-030", "SEAL-030", 0, 500, "wrong_item", None)],
    "refusal split in two lines": [("SEAL-030", None, 0, 200, "wrong_item", None),
                                   ("SEAL-030", "ORING-03", 0, 300, "wrong_item", None)],
}
WRONG_ITEM_DIFFERENT = {
    "received instead of refused": [("SEAL-030", "ORING-03", 500, 0, None, None)],
    "part refused": [("SEAL-030", None, 0, 400, "wrong_item", None)],
    "another reason": [("SEAL-030", None, 0, 500, "quality", None)],
    "refused against another ordered item": [("SEAL-020", None, 0, 500, "wrong_item", None)],
}
# An over-shipment: received up to the order, the excess refused; one line or two.
OVER: list[Line] = [("FAST-NUT", None, 2000, 100, "over_shipment", None)]
OVER_SAME = {"received and refused on two lines": [("FAST-NUT", None, 2000, 0, None, None),
                                                   ("FAST-NUT", "FAST-NUT", 0, 100, "over_shipment", None)]}
OVER_DIFFERENT = {"everything received": [("FAST-NUT", None, 2100, 0, None, None)],
                  "excess received, order refused": [("FAST-NUT", None, 100, 2000, "over_shipment", None)]}
# A substitute received: keyed by the item that went into stock (RCV-1.4).
SUB: list[Line] = [("SEAL-020", "ORING-02", 500, 0, None, "CS1")]
SUB_DIFFERENT = {"received as the ordered item": [("SEAL-020", None, 500, 0, None, "CS1")],
                 "another lot": [("SEAL-020", "ORING-02", 500, 0, None, "CS9")]}


@pytest.mark.parametrize("base,variant", [(WRONG_ITEM, v) for v in WRONG_ITEM_SAME.values()]
                         + [(OVER, v) for v in OVER_SAME.values()], ids=[*WRONG_ITEM_SAME, *OVER_SAME])
def test_receipts_written_differently_project_alike(base, variant):
    assert project("receipt_lines", variant) == project("receipt_lines", base)


@pytest.mark.parametrize("base,variant", [(WRONG_ITEM, v) for v in WRONG_ITEM_DIFFERENT.values()]
                         + [(OVER, v) for v in OVER_DIFFERENT.values()]
                         + [(SUB, v) for v in SUB_DIFFERENT.values()],
                         ids=[*WRONG_ITEM_DIFFERENT, *OVER_DIFFERENT, *SUB_DIFFERENT])
def test_receipts_that_break_a_clause_project_differently(base, variant):
    assert project("receipt_lines", variant) != project("receipt_lines", base)


def test_refused_quantity_is_keyed_by_the_ordered_item():
    rows = project("receipt_lines", WRONG_ITEM + SUB)
    assert {(r["ordered_item"], r["item"], r["qty_refused"], r["refusal_reason"]) for r in rows} == {
        ("SEAL-030", "", "500.0000", "wrong_item"), ("SEAL-020", "ORING-02", "0.0000", "")}


# Invoice lines: (kind, po_line, item typed, qty, unit price, amount in cents).
BILLED = [("item", 1, "ORING-02", 500, 4.11, 205500), ("item", 3, "FAST-NUT", 2100, 0.17, 35700),
          ("freight", None, None, None, None, 6400)]
BILLED_SAME = {
    "no item codes typed": [("item", 1, None, 500, 4.11, 205500), ("item", 3, None, 2100, 0.17, 35700),
                            ("freight", None, None, None, None, 6400)],
    "the ordered item's code typed": [("item", 1, "SEAL-020", 500, 4.11, 205500),
                                      ("item", 3, "FAST-NUT", 2100, 0.17, 35700),
                                      ("freight", None, None, None, None, 6400)],
}
BILLED_DIFFERENT = {
    "quantity corrected to received": [("item", 1, None, 500, 4.11, 205500), ("item", 3, None, 2000, 0.17, 34000),
                                       ("freight", None, None, None, None, 6400)],
    "price corrected": [("item", 1, None, 500, 4.10, 205000), ("item", 3, None, 2100, 0.17, 35700),
                        ("freight", None, None, None, None, 6400)],
    "billed on the wrong PO line": [("item", 2, None, 500, 4.11, 205500), ("item", 3, None, 2100, 0.17, 35700),
                                    ("freight", None, None, None, None, 6400)],
    "freight left out": [("item", 1, None, 500, 4.11, 205500), ("item", 3, None, 2100, 0.17, 35700)],
}


@pytest.mark.parametrize("variant", BILLED_SAME.values(), ids=list(BILLED_SAME))
def test_invoice_lines_written_differently_project_alike(variant):
    assert project("ap_invoice_lines", invoice=variant) == project("ap_invoice_lines", invoice=BILLED)


@pytest.mark.parametrize("variant", BILLED_DIFFERENT.values(), ids=list(BILLED_DIFFERENT))
def test_invoice_lines_not_as_billed_project_differently(variant):
    assert project("ap_invoice_lines", invoice=variant) != project("ap_invoice_lines", invoice=BILLED)
