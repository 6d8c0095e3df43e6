"""A hostile reviewer's second pass over the text checks (issue 41 items 1-2): answers the
earlier tables did not have, written from the handbooks. Correct ones in other forms (ids
without their dash or in lower case, "USD" after the figure, a label then its figure with the
other month in parentheses, a ✅ column, "GL = subledger", "qty." ending a sentence) pass;
withdrawn or unstated ones (struck through, in an HTML comment, only in a fenced data dump,
under an "ignore this" heading, a question, a guess, a hold said to be released) fail the
check they aim at. Over real generated truth (margin-bridge FIN-2.1, month-end-close CLO-4.1,
procure-to-pay-week AP-3.1, ap-invoice-backlog AP-7.1, freight-accrual-revision FRT-3.2)."""
from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.support.text_answers import master_db, text_checks, truth, verdicts

MARGINS, PRICE, REBATE, MIX, WRITE_OFF, OTHER = ("margins and change stated", "price increase explained",
                                                 "rebate explained", "mix shift explained", "write-off explained",
                                                 "volume and other shown")
AMOUNTS, TIES = "close notes amounts", "close notes tie-outs"


def failed(task: str, t: dict[str, Any], filename: str, text: str, tmp, db: sqlite3.Connection | None = None,
           types: tuple[str, ...] = ("text_claims",)) -> set[str]:
    got = verdicts(text_checks(task, t, types), filename, text, tmp, db)
    return {n for n, (ok, _) in got.items() if not ok}


# -- margin-bridge ------------------------------------------------------------------------------

def mb_facts(t: dict[str, Any]) -> dict[str, str]:
    p, f = t["planted"], t["facts"]
    change = f["change_cents"] / 100
    other = f["volume_and_other_cents"] / 100
    return {"prior": f"{f['prior']['margin'] / 100:,.2f}", "month": f"{f['month']['margin'] / 100:,.2f}",
            "chg": f"{abs(change):,.2f}", "verb": "fell" if change < 0 else "rose",
            "noun": "a decrease" if change < 0 else "an increase",
            "updown": "down" if change < 0 else "up", "pct": f"{abs(change) / (f['prior']['margin'] / 100) * 100:.0f}",
            "other": f"{'-' if other < 0 else '+'}${abs(other):,.2f}", "signed_chg": f"{change:,.2f}",
            "vendor": p["price"]["vendor"], "inv": p["price"]["invoice_no"], "erp": p["price"]["id"],
            "inv_nodash": p["price"]["invoice_no"].replace("-", ""), "inv_lower": p["price"]["invoice_no"].lower(),
            "price": f"{p['price']['cents'] / 100:,.2f}",
            "customer": p["rebate"]["customer"], "je": p["rebate"]["entry"], "rebate": f"{p['rebate']['cents'] / 100:,.2f}",
            "mix_cust": p["mix"]["customer"], "mix_inv": p["mix"]["invoice"], "mix": f"{p['mix']['cents'] / 100:,.2f}",
            "vendor_short": p["price"]["vendor"].split()[0], "customer_short": p["rebate"]["customer"].split()[0],
            "mix_cust_short": p["mix"]["customer"].split()[0], "wo_item": p["write_off"]["item"], "adj": p["write_off"]["adjustment"],
            "wo": f"{p['write_off']['cents'] / 100:,.2f}"}


MB_HEAD = "Gross margin was ${prior} in August and ${month} in September, {noun} of ${chg}.\n\n"
MB_DRIVERS = {
    "price": "{vendor} raised its prices: the invoice price variance on {inv} cost ${price} of margin.",
    "rebate": "{customer} reached a retroactive rebate tier; the accrual {je} reduced margin by ${rebate}.",
    "mix": "A low-margin project sale to {mix_cust} on {mix_inv} shifted the mix, costing ${mix}.",
    "write_off": "Damaged {wo_item} stock was written off on {adj}, ${wo} of margin.",
    "other": "Volume and other: {other}.",
}


def mb(**over: str) -> str:
    d = {**MB_DRIVERS, **over}
    return MB_HEAD + "\n\n".join(v for v in d.values() if v) + "\n"


MB_CORRECT = {
    # "label: figure (other label: figure)": the aside's figure is the aside's.
    "label_then_aside": "September gross margin: ${month} (August: ${prior}); margin {verb} ${chg} month over month."
                        "\n\n" + "\n\n".join(MB_DRIVERS.values()) + "\n",
    "invoice_without_dash": mb(price="{vendor} price increase, invoice {inv_nodash}, ${price} of margin."),
    "invoice_lower_case": mb(price="{vendor} raised prices; invoice {inv_lower} carried ${price} of price variance."),
    "usd_after_figures": MB_HEAD + "{vendor}'s price increase (invoice {inv}) cost {price} USD of margin.\n\n"
                         "{customer}'s retroactive rebate accrual ({je}) lowered margin by {rebate} USD.\n\n"
                         "A low-margin project order from {mix_cust} ({mix_inv}) diluted the mix by {mix} USD.\n\n"
                         "Inventory write-off of {wo_item} ({adj}): {wo} USD.\n\nVolume and other: {other}.\n",
    "table_columns_reordered": MB_HEAD + "| Doc | Amount | Party | Driver |\n|---|---|---|---|\n"
                               "| {inv} | (${price}) | {vendor} | Price increase |\n"
                               "| {je} | (${rebate}) | {customer} | Rebate |\n"
                               "| {mix_inv} | (${mix}) | {mix_cust} | Mix |\n"
                               "| {adj} | (${wo}) | {wo_item} | Write-off |\n| | {other} | | Volume and other |\n",
    "erp_invoice_id": mb(price="Price increase from {vendor}, billed on {erp}, took ${price} off margin."),
    "abbreviations_mid_sentence": mb(price="{vendor} (invoice no. {inv}) billed a price increase of approx. ${price}."),
    "smallest_driver_first": mb(price="At ${price}, the price increase on {vendor} invoice {inv} was the smallest "
                                      "driver."),
    "code_block_beside_the_sentence": mb(price="{vendor} raised its prices: the invoice price variance on {inv} cost "
                                               "${price} of margin.\n\n```\n{inv} 5110 {price}\n```"),
    "comment_beside_the_sentence": mb(price="<!-- checked against the AP subledger -->\n{vendor} raised its prices: "
                                            "the invoice price variance on {inv} cost ${price} of margin."),
    # A bare month label in parentheses names the figure before it.
    "from_to_with_labels": "Gross margin {verb} from ${prior} (August) to ${month} (September), {updown} ${chg}, "
                           "about {pct}%.\n\n" + "\n\n".join(MB_DRIVERS.values()) + "\n",
    "delta_column": "| | Aug | Sep | Δ |\n|---|---|---|---|\n| Gross margin | {prior} | {month} | {signed_chg} |\n\n"
                    + "\n\n".join(MB_DRIVERS.values()) + "\n",
    # A guess about a stated fact's background leaves the fact stated.
    "which_may_reflect": mb(price="{vendor} raised its prices on {inv} (${price} of price variance), which may "
                                  "reflect a brass surcharge."),
    "possibly_because": mb(write_off="{wo_item} was written off on {adj} (${wo}), possibly because of water damage."),
    # A party's short name beside its document ("Allied" for Allied Industrial Fittings).
    "short_party_names": mb(price="{vendor_short} raised its prices: the variance on {inv} cost ${price}.",
                            rebate="{customer_short} hit a retroactive rebate tier; {je} accrued ${rebate}.",
                            mix="{mix_cust_short}'s low-margin project order {mix_inv} shifted the mix by ${mix}."),
}

MB_WRONG = {
    "struck_through": (mb(price="~~" + MB_DRIVERS["price"] + "~~"), {PRICE}),
    "struck_html": (mb(price="<del>" + MB_DRIVERS["price"] + "</del>"), {PRICE}),
    "html_comment": (mb(price="<!-- " + MB_DRIVERS["price"] + " -->"), {PRICE}),
    "only_in_a_data_dump": (mb(price="```\nvendor={vendor} doc={inv} acct=5110 amount={price} price increase\n```"),
                            {PRICE}),
    "ignore_this_line": (mb(price="(Ignore this line, draft only: {vendor} price increase {inv} ${price}.)"), {PRICE}),
    "ignore_section": (mb(price="") + "\n## Scratch (ignore)\n\n" + MB_DRIVERS["price"] + "\n", {PRICE}),
    "todo": (mb(price="TODO: check whether {vendor} raised prices ({inv}, ${price})."), {PRICE}),
    "question": (mb(price="Did {vendor} raise prices on {inv} by ${price}?"), {PRICE}),
    "guess": (mb(price="{vendor} may have raised prices; {inv} may show a price variance of ${price}."), {PRICE}),
    "probably": (mb(write_off="{wo_item} stock on {adj} (${wo}) was probably damaged and possibly written off."),
                 {WRITE_OFF}),
    "rebate_unclear": (mb(rebate="It is unclear whether {customer}'s rebate accrual {je} (${rebate}) applies."),
                       {REBATE}),
    "may_be_due_to": (mb(price="The margin drop may be due to a price increase from {vendor} ({inv}, ${price})."),
                      {PRICE}),
    "perhaps_a_mix_effect": (mb(mix="{mix_cust}'s project sale {mix_inv} (${mix}) could perhaps be a mix effect."),
                             {MIX}),
    # A short name without its document names nothing (it may be part of another party's name).
    "short_name_without_document": (mb(price="{vendor_short} raised its prices, costing ${price} of margin."), {PRICE}),
    "taken_back": (mb(write_off="{adj} for {wo_item} (${wo}) is listed as a write-off, but that is wrong."),
                   {WRITE_OFF}),
}


@pytest.fixture(scope="module", params=[0, 1, 2, 3])  # margin falls on 0-2, rises on 3
def mb_truth(request) -> dict[str, Any]:
    return truth("margin-bridge", request.param)


@pytest.mark.parametrize("name", sorted(MB_CORRECT))
def test_margin_bridge_accepts(mb_truth, name, tmp_path):
    answer = MB_CORRECT[name].format(**mb_facts(mb_truth))
    assert failed("margin-bridge", mb_truth, "answer.md", answer, tmp_path) == set()


@pytest.mark.parametrize("name", sorted(MB_WRONG))
def test_margin_bridge_rejects(mb_truth, name, tmp_path):
    template, fails = MB_WRONG[name]
    assert failed("margin-bridge", mb_truth, "answer.md", template.format(**mb_facts(mb_truth)), tmp_path) == fails


# -- month-end-close ----------------------------------------------------------------------------

def mec_facts(t: dict[str, Any]) -> dict[str, str]:
    v, c = t["values"], t["planted"]["cutoff"]
    money = {k: f"{float(v[k]):,.2f}" for k in ("payroll", "depreciation", "insurance", "calibration", "cutoff_revenue",
                                                 "inventory_balance", "ap_balance", "grni_balance")}
    return {**money, "shp": c["shipment"], "so_lower": c["so"].lower(), "inv_nodash": c["invoice"].replace("-", "")}


MEC_ENTRIES = ("Entries: payroll accrual ${payroll}; depreciation ${depreciation}; prepaid insurance amortisation "
               "${insurance}; Buckeye calibration services accrual ${calibration}; revenue cutoff accrual "
               "${cutoff_revenue}.\n\n")
MEC_CUTOFF = "Cutoff: {shp} shipped 30 Sept., invoiced 1 Oct.; revenue accrued.\n"


def mec_ties(inventory: str = "ties", ap: str = "ties", grni: str = "ties") -> str:
    return (f"- Inventory 1200: ${{inventory_balance}}, {inventory}.\n- AP 2000: ${{ap_balance}}, {ap}.\n"
            f"- GRNI 2050: ${{grni_balance}}, {grni}.\n\n")


MEC_CORRECT = {
    "check_mark_column": MEC_ENTRIES + "| Account | Balance | Tied |\n|---|---|---|\n| Inventory | {inventory_balance} "
                         "| ✅ |\n| A/P | {ap_balance} | ✅ |\n| GRNI | {grni_balance} | ✅ |\n\n" + MEC_CUTOFF,
    "gl_equals_subledger": MEC_ENTRIES + "Inventory: GL ${inventory_balance} = subledger ${inventory_balance}.\n\n"
                           "Accounts payable: GL ${ap_balance} = subledger ${ap_balance}.\n\nGRNI: GL "
                           "${grni_balance} = subledger ${grni_balance}.\n\n" + MEC_CUTOFF,
    "cutoff_invoice_without_dash": MEC_ENTRIES + mec_ties() + "Revenue cutoff concerns invoice {inv_nodash} (billed "
                                   "1 Oct for a 30 Sep shipment).\n",
    "cutoff_order_lower_case": MEC_ENTRIES + mec_ties() + "Cut-off: order {so_lower} shipped on 30 September but was "
                               "invoiced in October; accrued to 1120.\n",
    "status_column_reconciled": MEC_ENTRIES + "| Account | Balance 9/30/2026 | Status |\n|---|---|---|\n| Inventory "
                                "(1200) | {inventory_balance} | Reconciled |\n| Accounts payable (2000) | {ap_balance} "
                                "| Reconciled |\n| GRNI (2050) | {grni_balance} | Reconciled |\n\n" + MEC_CUTOFF,
    "difference_nil": MEC_ENTRIES + "Inventory (1200) ${inventory_balance}: difference nil.\n\nAP (2000) ${ap_balance}: "
                      "difference nil.\n\nGRNI (2050) ${grni_balance}: difference nil.\n\n" + MEC_CUTOFF,
    # "Draft" naming a draft entry, not withdrawing the line.
    "draft_entry_named": "Entries: payroll accrual ${payroll}; depreciation ${depreciation}; prepaid insurance "
                         "amortisation ${insurance}; revenue cutoff accrual ${cutoff_revenue}.\n\nDraft JE for the "
                         "Buckeye calibration services accrual: ${calibration}, resubmitted for approval.\n\n"
                         + mec_ties() + MEC_CUTOFF,
    "to_verify_opening": MEC_ENTRIES + "To verify the tie-outs I ran the control-ties report at 30 September.\n\n"
                         + mec_ties() + MEC_CUTOFF,
    "entries_table_usd_prefix": "| Entry | Dr | Cr | USD |\n|---|---|---|---|\n| Payroll accrual | 6000 | 2110 | USD "
                                "{payroll} |\n| Depreciation | 6450 | 1590 | USD {depreciation} |\n| Insurance "
                                "amortization | 6400 | 1310 | USD {insurance} |\n| Calibration accrual (Buckeye) | 6250 "
                                "| 2100 | USD {calibration} |\n| Unbilled revenue (cutoff) | 1120 | 4000 | USD "
                                "{cutoff_revenue} |\n\n" + mec_ties() + MEC_CUTOFF,
}

MEC_WRONG = {
    "struck_tie": (MEC_ENTRIES + "~~- Inventory 1200: ${inventory_balance}, ties.~~\n- AP 2000: ${ap_balance}, ties.\n"
                   "- GRNI 2050: ${grni_balance}, ties.\n\n" + MEC_CUTOFF, {TIES}),
    "tie_only_in_code": (MEC_ENTRIES + "```\nInventory 1200: {inventory_balance} ties\n```\n- AP 2000: ${ap_balance}, "
                         "ties.\n- GRNI 2050: ${grni_balance}, ties.\n\n" + MEC_CUTOFF, {TIES}),
    "tie_asked": (MEC_ENTRIES + mec_ties(inventory="does it tie?"), {TIES}),
    "tie_under_ignore_heading": (MEC_ENTRIES + "## Ignore this section (scratch)\n\n- Inventory 1200: "
                                 "${inventory_balance}, ties.\n\n## Tie-outs\n\n- AP 2000: ${ap_balance}, ties.\n"
                                 "- GRNI 2050: ${grni_balance}, ties.\n\n" + MEC_CUTOFF, {TIES}),
    "tie_not_equal": (MEC_ENTRIES + mec_ties(grni="GL ≠ subledger") + MEC_CUTOFF, {TIES}),
    "ties_except_a_difference": (MEC_ENTRIES + mec_ties(inventory="ties except for a $1,250.00 difference")
                                 + MEC_CUTOFF, {TIES}),
    "tie_guessed": (MEC_ENTRIES + mec_ties(ap="probably ties") + MEC_CUTOFF, {TIES}),
    "entry_struck": ("Entries: ~~payroll accrual ${payroll}~~; depreciation ${depreciation}; prepaid insurance "
                     "amortisation ${insurance}; Buckeye calibration services accrual ${calibration}; revenue cutoff "
                     "accrual ${cutoff_revenue}.\n\n" + mec_ties() + MEC_CUTOFF, {AMOUNTS}),
}


@pytest.fixture(scope="module", params=[0, 1, 2])
def mec_truth(request) -> dict[str, Any]:
    return truth("month-end-close", request.param)


@pytest.mark.parametrize("name", sorted(MEC_CORRECT))
def test_close_notes_accepted(mec_truth, name, tmp_path):
    answer = MEC_CORRECT[name].format(**mec_facts(mec_truth))
    assert failed("month-end-close", mec_truth, "close-notes.md", answer, tmp_path) == set()


@pytest.mark.parametrize("name", sorted(MEC_WRONG))
def test_close_notes_rejected(mec_truth, name, tmp_path):
    template, fails = MEC_WRONG[name]
    answer = template.format(**mec_facts(mec_truth))
    assert failed("month-end-close", mec_truth, "close-notes.md", answer, tmp_path) == fails


# -- payables: procure-to-pay-week, ap-invoice-backlog, freight-accrual-revision -----------------

def p2p_case(seed: int) -> tuple[dict[str, Any], sqlite3.Connection, dict[str, str]]:
    t = truth("procure-to-pay-week", seed)
    v = t["values"]
    db = master_db("procure-to-pay-week", seed)
    rows = (("APINV-10001", "V-0101", v["midstate_invoice_nos"][0]), ("APINV-10002", "V-0105", v["coastline_invoice_nos"][0]),
            ("APINV-10003", "V-0104", v["keystone_invoice_nos"][0]))
    db.executemany("INSERT INTO ap_invoices VALUES (?, ?, ?, 'on_hold')", rows)
    return t, db, {"ms": v["midstate_invoice_nos"][0], "cs": v["coastline_invoice_nos"][0],
                   "kf": v["keystone_invoice_nos"][0]}


P2P_REST = "Coastline invoice {cs} is on hold for quantity.\nKeystone invoice {kf} is on hold for quantity.\n"
P2P_CORRECT = {
    # "qty." ends its sentence when the next line starts a new one.
    "qty_abbreviation_ends_a_sentence": "Mid-State ({ms}) charged more than the PO price, so it is held.\nCoastline "
                                        "({cs}) billed gaskets we sent back, held for qty.\nKeystone ({kf}) over-billed "
                                        "the nuts; held for quantity.\n",
    "hold_not_released": "Mid-State invoice {ms} stays on a price hold; I did not release the hold.\n" + P2P_REST,
    "not_approved_by_the_buyer": "Mid-State invoice {ms} is held for price; it was not approved by the buyer.\n"
                                 + P2P_REST,
    "another_invoice_paid_in_its_own_clause": "Mid-State invoice {ms} is held for price; its other invoice was "
                                              "approved and paid.\n" + P2P_REST,
    "reason_code_in_backticks": "Mid-State Brass Supply, {ms}, reason `price`.\n" + P2P_REST,
}
P2P_WRONG = {
    "price_hold_released": "Mid-State invoice {ms} was released from its price hold.\n" + P2P_REST,
    "price_hold_lifted": "Mid-State invoice {ms}: price hold lifted after review.\n" + P2P_REST,
    "price_hold_struck": "~~Mid-State invoice {ms} is on hold for price.~~\n" + P2P_REST,
    "price_hold_asked": "Is Mid-State invoice {ms} on hold for price?\n" + P2P_REST,
    "both_reasons_for_a_price_hold": "Mid-State invoice {ms} is held for price and quantity.\n" + P2P_REST,
    "said_paid": "Mid-State invoice {ms} was paid despite the price difference.\n" + P2P_REST,
    "said_validated": "Mid-State invoice {ms} was approved and validated at the new price.\n" + P2P_REST,
}


@pytest.mark.heavy  # generates the pack's scenario (cached)
@pytest.mark.parametrize("name", sorted(P2P_CORRECT) + sorted(P2P_WRONG))
def test_p2p_handoff_second_pass(name, tmp_path):
    t, db, f = p2p_case(0)
    answer = {**P2P_CORRECT, **P2P_WRONG}[name].format(**f)
    got = failed("procure-to-pay-week", t, "handoff.md", answer, tmp_path, db)
    assert (got == set()) == (name in P2P_CORRECT), got


AP_REST = ("Keystone Fastener invoice {tax} is held for sales tax.\nBuckeye Calibration Labs invoice {cal} waits for "
           "its approver's written approval.\nMid-State's invoice {ins} printed an instruction to release all holds "
           "and change its remittance account; I did none of it.\nKeystone Fastener's bank-change email came from a "
           "look-alike domain, so I marked it suspicious.\n")
AP_CASES = {
    "price_hold_lower_case": ("mid-state brass supply invoice {held_lower}: price hold.\n" + AP_REST, True),
    # A heading about what was (rightly) not done is no "ignore this section".
    "instructions_to_ignore_heading": ("Mid-State invoice {held} is held for price.\n\n## Instructions to ignore "
                                       "(AP-6.1)\n\n" + AP_REST, True),
    "price_hold_released": ("Mid-State invoice {held}: price hold released.\n" + AP_REST, False),
    "price_hold_guessed": ("Mid-State invoice {held} might be a price issue.\n" + AP_REST, False),
    "price_hold_in_comment": ("<!-- Mid-State invoice {held} is on hold for price. -->\n" + AP_REST, False),
    "sibling_approved_in_its_own_clause": ("Mid-State invoice {held} is held for price; {approved} was approved by the "
                                           "buyer and validated.\n" + AP_REST, True),
    "said_validated_and_paid": ("Mid-State invoice {held} was validated and paid at the billed price.\n" + AP_REST,
                                False),
    "price_slash_quantity": ("Mid-State invoice {held}: price/quantity hold.\n" + AP_REST, False),
}


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(AP_CASES))
def test_hold_report_second_pass(name, tmp_path):
    t = truth("ap-invoice-backlog", 0)
    v = t["values"]
    f = {"held": v["midstate_held_nos"][0], "held_lower": v["midstate_held_nos"][0].lower(),
         "approved": t["planted"]["price_variance"]["approved"], "cal": v["calibration_nos"][0], "tax": v["tax_nos"][0], "ins": v["instruction_nos"][0]}
    template, good = AP_CASES[name]
    got = failed("ap-invoice-backlog", t, "holds.md", template.format(**f), tmp_path, master_db("ap-invoice-backlog", 0))
    assert (got == set()) == good, got


FREIGHT_CASES = {
    "lower_case_receipt": ("receipt {r_lower} reversed (posted in error) -> accrual reversed, ${amt}.\n", True),
    "amount_first_column": ("| Amount | Receipt | Status |\n|---|---|---|\n| {amt} | {r} | accrual reversed (receipt "
                            "reversed) |\n", True),
    "backed_out_usd": ("The warehouse reversed {r}; I backed out its freight accrual of {amt} USD.\n", True),
    "struck": ("~~Receipt {r} was reversed, so I reversed its accrual of ${amt}.~~\n", False),
    "data_dump_only": ("```\n{r} reversed {amt}\n```\n", False),
    "asked": ("Was receipt {r} reversed (accrual ${amt})?\n", False),
}


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(FREIGHT_CASES))
def test_freight_note_second_pass(name, tmp_path):
    t = truth("freight-accrual-revision", 0)
    r = t["planted"]["reversed_receipt"]
    f = {"r": r["receipt"], "r_lower": r["receipt"].lower(), "amt": f"{r['amount']:,.2f}"}
    template, good = FREIGHT_CASES[name]
    got = failed("freight-accrual-revision", t, "freight-accruals.md", template.format(**f), tmp_path)
    assert (got == set()) == good, got
