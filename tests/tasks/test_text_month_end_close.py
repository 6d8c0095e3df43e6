"""month-end-close's close-notes checks, both ways: notes a careful reviewer accepts under
CLO-3.1 and CLO-4.1 (each entry with its amount; each tie-out with its balance at 30 September
and whether it ties; the revenue cutoff with its shipment or invoice) in other words, forms and
structures pass; wrong and gaming notes fail the checks they break. Over seeds 0-2's truth."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.support.text_answers import (
    assert_fails_exactly,
    assert_passes_all,
    assert_table_sizes,
    master_db,
    text_checks,
    truth,
    verdicts,
)

TASK = "month-end-close"
SEEDS = (0, 1, 2)
AMOUNTS, TIES = "close notes amounts", "close notes tie-outs"
ALL = (AMOUNTS, TIES)


def usd(x: float) -> str:
    return f"${x:,.2f}"


def whole(x: float) -> str:
    return f"${x:,.0f}"


def kilo(x: float) -> str:
    """Three significant figures."""
    if x < 1000:
        return f"${x:,.0f}"
    if x < 10_000:
        return f"${x / 1000:.2f}K"
    return f"${x / 1000:.1f}K" if x < 100_000 else f"${x / 1000:.0f}K"


@dataclass
class Facts:
    """What the accountant knows at the end of the close."""

    payroll: float
    depreciation: float
    insurance: float
    calibration: float
    revenue: float
    wages: float
    taxes: float
    travel: float
    inventory: float
    ap: float
    grni: float
    shipment: str
    invoice: str
    so: str


def facts(seed: int) -> tuple[Facts, dict]:
    t = truth(TASK, seed)
    v, f, c = t["values"], t["facts"], t["planted"]["cutoff"]
    assert v["inventory_tie"] == v["ap_tie"] == v["grni_tie"] == ["ties"]
    return Facts(payroll=float(v["payroll"]), depreciation=float(v["depreciation"]), insurance=float(v["insurance"]),
                 calibration=float(v["calibration"]), revenue=float(v["cutoff_revenue"]), wages=f["wages"] / 100,
                 taxes=f["taxes"] / 100, travel=f["travel"] / 100, inventory=float(v["inventory_balance"]),
                 ap=float(v["ap_balance"]), grni=float(v["grni_balance"]), shipment=c["shipment"],
                 invoice=c["invoice"], so=c["so"]), t


def entries_bullets(f: Facts, money: Callable[[float], str] = usd) -> str:
    return (f"## Entries booked\n\n- Payroll accrual (register, paid 2 October): {money(f.payroll)}.\n"
            f"- Depreciation per the fixed-asset register, including the new CNC lathe: {money(f.depreciation)}.\n"
            f"- Prepaid insurance amortisation: {money(f.insurance)}.\n"
            f"- Buckeye Calibration services accrual (returned for support, resubmitted): {money(f.calibration)}.\n"
            f"- Revenue cutoff accrual to unbilled receivables: {money(f.revenue)}, reversed 1 October.\n\n")


def ties_bullets(f: Facts, money: Callable[[float], str] = usd) -> str:
    return (f"## Tie-outs at 30 September\n\n- Inventory (1200): {money(f.inventory)}, ties to the subledger.\n"
            f"- Accounts payable (2000): {money(f.ap)}, agrees with the AP subledger.\n"
            f"- GRNI (2050): {money(f.grni)}, reconciles to the receiving subledger.\n\n")


def cutoff_line(f: Facts) -> str:
    return (f"## Cutoff\n\nShipment {f.shipment} went out on 30 September and was billed on {f.invoice} on "
            f"1 October; its revenue was accrued at 30 September.\n\n## Open items\n\nNone.\n")


# ------------------------------------------------------------------------------ correct notes


def c_bullets(f: Facts) -> str:
    return "# September close notes\n\n" + entries_bullets(f) + ties_bullets(f) + cutoff_line(f)


def c_rounded(f: Facts) -> str:
    return "# Close notes\n\n" + entries_bullets(f, whole) + ties_bullets(f, whole) + cutoff_line(f)


def c_tables(f: Facts) -> str:
    return ("# September 2026 close\n\n| Entry | Account | Amount |\n|---|---|---:|\n"
            f"| Payroll accrual | 6000/6050/6600 to 2110/2120 | {f.payroll:,.2f} |\n"
            f"| Depreciation | 6450 | {f.depreciation:,.2f} |\n| Insurance amortisation | 6400 | {f.insurance:,.2f} |\n"
            f"| Calibration services accrual | 6250 | {f.calibration:,.2f} |\n"
            f"| Revenue cutoff ({f.shipment}) | 1120 / 4000 | {f.revenue:,.2f} |\n\n"
            "| Control account | GL balance 30 Sept | Subledger | Difference | Tied? |\n|---|---:|---:|---:|---|\n"
            f"| Inventory 1200 | {f.inventory:,.2f} | {f.inventory:,.2f} | 0.00 | Yes |\n"
            f"| AP 2000 | {f.ap:,.2f} | {f.ap:,.2f} | 0.00 | Yes |\n"
            f"| GRNI 2050 | {f.grni:,.2f} | {f.grni:,.2f} | 0.00 | Yes |\n\n"
            f"Nothing is open.\n")


def c_prose(f: Facts) -> str:
    return ("I booked the September payroll accrual of " + usd(f.payroll) + ", depreciation of " + usd(f.depreciation)
            + " and the prepaid insurance release of " + usd(f.insurance) + ". The calibration accrual for Buckeye ("
            + usd(f.calibration) + ") was returned for support and is now posted. Revenue of " + usd(f.revenue)
            + f" for shipment {f.shipment}, shipped 30 September and invoiced 1 October, was accrued as a cutoff "
            f"entry and reversed on 1 October.\n\nInventory ({usd(f.inventory)}), accounts payable ({usd(f.ap)}) and "
            f"GRNI ({usd(f.grni)}) all tie to their subledgers at 30 September.\n")


def c_label_lines(f: Facts) -> str:
    return (f"Payroll: {usd(f.payroll)} (wages {usd(f.wages)}, taxes {usd(f.taxes)}, travel {usd(f.travel)})\n"
            f"Depreciation: {usd(f.depreciation)}\nInsurance: {usd(f.insurance)}\nCalibration: {usd(f.calibration)}\n"
            f"Cutoff revenue: {usd(f.revenue)} (invoice {f.invoice})\n\n"
            f"Inventory: {usd(f.inventory)} - tied\nA/P: {usd(f.ap)} - tied\n"
            f"Goods received not invoiced: {usd(f.grni)} - tied\n")


def c_kilo(f: Facts) -> str:
    return ("# Notes\n\n" + entries_bullets(f, kilo) + ties_bullets(f, kilo) +
            f"Cut-off: sales order {f.so} shipped in September, billed in October.\n")


def c_numbered_other_order(f: Facts) -> str:
    return (f"1. GRNI (goods received but not invoiced) of {usd(f.grni)} matches the receipts subledger.\n"
            f"2. AP at {usd(f.ap)} matches the open invoices.\n"
            f"3. Inventory at {usd(f.inventory)} matches the stock valuation; no difference.\n"
            f"4. Cutoff: {f.invoice} (shipment {f.shipment}) accrued to September.\n"
            f"5. Entries: revenue cutoff {usd(f.revenue)}; calibration {usd(f.calibration)}; insurance "
            f"{usd(f.insurance)}; depreciation {usd(f.depreciation)}; payroll {usd(f.payroll)}.\n")


def c_headings_paragraphs(f: Facts) -> str:
    return (f"## Payroll accrual\n\nBooked {usd(f.payroll)} from the Payline register.\n\n"
            f"## Depreciation\n\nBooked {usd(f.depreciation)}.\n\n## Prepaid amortisation\n\nReleased "
            f"{usd(f.insurance)} of insurance.\n\n## Services accrual\n\nBuckeye Calibration Labs, {usd(f.calibration)}.\n\n"
            f"## Revenue cutoff\n\nAccrued {usd(f.revenue)} for shipment {f.shipment}.\n\n"
            f"## Tie-outs\n\nInventory {usd(f.inventory)}: ties. AP {usd(f.ap)}: ties. GRNI {usd(f.grni)}: ties.\n")


def c_status_column(f: Facts) -> str:
    return (entries_bullets(f) + "| Account | Balance | Status |\n|---|---|---|\n"
            f"| Inventory | ${f.inventory:,.2f} | Tied |\n| Accounts payable | ${f.ap:,.2f} | Agreed |\n"
            f"| GRNI | ${f.grni:,.2f} | Reconciled, no difference |\n\n" + cutoff_line(f))


def c_sentences_per_tie(f: Facts) -> str:
    return (entries_bullets(f) + f"The inventory control account stood at {usd(f.inventory)} on 30 Sept. and ties to "
            f"the stock ledger. Trade payables were {usd(f.ap)}, in agreement with the AP subledger. GRNI was "
            f"{usd(f.grni)} and reconciled with no difference.\n\n" + cutoff_line(f))


CORRECT: dict[str, Callable[[Facts], str]] = {
    "bullets": c_bullets, "rounded to dollars": c_rounded, "tables": c_tables, "prose": c_prose,
    "label lines": c_label_lines, "K amounts": c_kilo, "numbered, other order": c_numbered_other_order,
    "headings and paragraphs": c_headings_paragraphs, "status column": c_status_column,
    "a sentence per tie-out": c_sentences_per_tie,
}


# ------------------------------------------------------------------------------ wrong notes


def w_ties(how: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        body = {
            "still to be done": f"- Inventory {usd(f.inventory)}: tie-out still to be done.\n- AP {usd(f.ap)}: ties.\n"
                                f"- GRNI {usd(f.grni)}: ties.\n",
            "does not tie": f"- Inventory {usd(f.inventory)} ties.\n- AP {usd(f.ap)} does not tie to the subledger.\n"
                            f"- GRNI {usd(f.grni)} ties.\n",
            "GRNI missing": f"- Inventory {usd(f.inventory)} ties.\n- AP {usd(f.ap)} ties.\n",
            "no balances": "Inventory, AP and GRNI all tie to their subledgers.\n",
            "rotated balances": "| Account | Balance | Tied? |\n|---|---|---|\n"
                                f"| Inventory | {usd(f.ap)} | Yes |\n| AP | {usd(f.grni)} | Yes |\n"
                                f"| GRNI | {usd(f.inventory)} | Yes |\n",
            "tied? no": "| Account | Balance | Tied? |\n|---|---|---|\n"
                        f"| Inventory | {usd(f.inventory)} | Yes |\n| AP | {usd(f.ap)} | No |\n"
                        f"| GRNI | {usd(f.grni)} | Yes |\n",
            "will tie": f"- Inventory {usd(f.inventory)} should tie once the count is posted.\n- AP {usd(f.ap)} ties.\n"
                        f"- GRNI {usd(f.grni)} ties.\n",
            "wrong balance": f"- Inventory {usd(f.inventory * 1.05)} ties.\n- AP {usd(f.ap)} ties.\n"
                             f"- GRNI {usd(f.grni)} ties.\n",
            "list everything": f"Inventory AP GRNI tie: {usd(f.inventory)} {usd(f.ap)} {usd(f.grni)}.\n",
            "out of balance": f"- Inventory {usd(f.inventory)} ties.\n- AP {usd(f.ap)} ties.\n"
                              f"- GRNI {usd(f.grni)} is out of balance with receiving.\n",
            "not yet reconciled": f"- Inventory {usd(f.inventory)}: not yet reconciled.\n- AP {usd(f.ap)} ties.\n"
                                  f"- GRNI {usd(f.grni)} ties.\n",
        }[how]
        return entries_bullets(f) + "## Tie-outs\n\n" + body + "\n" + cutoff_line(f)
    return fn


def w_cutoff(how: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        line = {"no document": "## Cutoff\n\nOne shipment of 30 September was billed in October; accrued.\n",
                "wrong document": "## Cutoff\n\nShipment SHP-99999 shipped 30 September; its revenue was accrued.\n",
                "document without cutoff": f"## Other\n\nInvoice {f.invoice} was issued on 1 October.\n",
                "no cutoff": "## Cutoff\n\nNo cutoff entry was needed.\n"}[how]
        return entries_bullets(f) + ties_bullets(f) + line
    return fn


def w_amounts(how: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        if how == "list everything":
            entries = (f"Entries: payroll, depreciation, insurance, calibration and cutoff revenue for "
                       f"{usd(f.revenue)}, {usd(f.calibration)}, {usd(f.payroll)}, {usd(f.insurance)} and "
                       f"{usd(f.depreciation)}.\n\n")
        elif how == "swapped payroll and depreciation":
            entries = entries_bullets(f).replace(usd(f.payroll), "@P").replace(usd(f.depreciation), usd(f.payroll)) \
                .replace("@P", usd(f.depreciation))
        elif how == "payroll missing":
            entries = "\n".join(x for x in entries_bullets(f).split("\n") if "Payroll" not in x) + "\n"
        elif how == "payroll wages only":
            entries = entries_bullets(f).replace(usd(f.payroll), usd(f.wages))
        elif how == "cutoff amount with tax":
            entries = entries_bullets(f).replace(usd(f.revenue), usd(f.revenue * 1.07))
        elif how == "calibration not booked":
            entries = entries_bullets(f).replace(f"Buckeye Calibration services accrual (returned for support, "
                                                 f"resubmitted): {usd(f.calibration)}.",
                                                 "Buckeye Calibration services accrual: not booked.")
        elif how == "amounts in a separate list":
            entries = ("## Entries booked\n\n- Payroll accrual.\n- Depreciation.\n- Insurance amortisation.\n"
                       "- Calibration accrual.\n- Revenue cutoff accrual.\n\nTotals: " + ", ".join(
                           usd(x) for x in (f.payroll, f.depreciation, f.insurance, f.calibration, f.revenue)) + "\n\n")
        elif how == "depreciation too coarse":
            entries = entries_bullets(f).replace(usd(f.depreciation), f"${f.depreciation / 1e6:.2f}M")
        elif how == "insurance a month's wrong share":
            entries = entries_bullets(f).replace(usd(f.insurance), usd(f.insurance * 12))
        elif how == "rotated table":
            vals = [f.payroll, f.depreciation, f.insurance, f.calibration, f.revenue]
            names = ["Payroll accrual", "Depreciation", "Insurance amortisation", "Calibration accrual",
                     "Revenue cutoff"]
            entries = "| Entry | Amount |\n|---|---|\n" + "\n".join(
                f"| {n} | {usd(vals[(i + 1) % 5])} |" for i, n in enumerate(names)) + "\n\n"
        else:
            raise KeyError(how)
        return entries + ties_bullets(f) + cutoff_line(f)
    return fn


AMOUNT_CASES = ("list everything", "swapped payroll and depreciation", "payroll missing", "payroll wages only",
                "cutoff amount with tax", "calibration not booked", "amounts in a separate list",
                "depreciation too coarse", "insurance a month's wrong share", "rotated table")
TIE_CASES = ("still to be done", "does not tie", "GRNI missing", "no balances", "rotated balances", "tied? no",
             "will tie", "wrong balance", "list everything", "out of balance", "not yet reconciled")
WRONG: dict[str, tuple[Callable[[Facts], str], frozenset[str]]] = {
    **{f"amounts: {h}": (w_amounts(h), frozenset({AMOUNTS})) for h in AMOUNT_CASES},
    **{f"tie-outs: {h}": (w_ties(h), frozenset({TIES})) for h in TIE_CASES},
    **{f"cutoff: {h}": (w_cutoff(h), frozenset({TIES})) for h in ("no document", "wrong document",
                                                                 "document without cutoff", "no cutoff")},
}


@pytest.fixture(scope="module", params=SEEDS)
def seeded(request) -> tuple[Facts, dict, sqlite3.Connection]:
    f, t = facts(request.param)
    return f, text_checks(TASK, t), master_db(TASK, request.param)


def test_every_text_check_has_ten_answers_each_way():
    assert_table_sizes(CORRECT, WRONG, ALL)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_close_notes_pass(seeded, name, tmp_path):
    f, checks, db = seeded
    assert set(checks) == set(ALL)
    got = verdicts(checks, "close-notes.md", CORRECT[name](f), tmp_path, db)
    assert_passes_all(got)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_close_notes_fail_what_they_break(seeded, name, tmp_path):
    f, checks, db = seeded
    fn, fails = WRONG[name]
    got = verdicts(checks, "close-notes.md", fn(f), tmp_path, db)
    assert_fails_exactly(got, fails)
