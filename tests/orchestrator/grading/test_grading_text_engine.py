"""The text-check engine's parts on their own: units, figures, kind words, negation, direction
and the binding of figures to claims (orchestrator/grading/text)."""
from __future__ import annotations

import pytest

from orchestrator.grading.text import Claim, figures, grade, matches, units
from orchestrator.grading.text.claims import direction


def test_abbreviations_do_not_end_a_sentence():
    text = ("Ohio Packaging Co. billed invoice no. PA-12345 for approx. $1.2K in Sept. 2026. "
            "The rebate was 2.5% of $1,234.56. Acme Co. The next one.")
    got = [u.text for u in units(text)]
    assert got[0] == "Ohio Packaging Co. billed invoice no. PA-12345 for approx. $1.2K in Sept. 2026."
    assert got[1] == "The rebate was 2.5% of $1,234.56."
    assert len(got) == 4  # "Acme Co." followed by a capitalised word ends a sentence


def test_markdown_structure_gives_rows_items_and_headings():
    md = ("# Bridge\n\n| Driver | Amount |\n|---|---|\n| Price. | (12) |\n| Mix | 5 |\n\n"
          "- one item\n  continued\n- two\nInventory: $5 ties\n")
    kinds = [(u.kind, u.text) for u in units(md)]
    # The first column holds row labels, so the other column is a unit with its cells labelled.
    assert kinds == [("heading", "Bridge"), ("row", "Price. | (12)"), ("row", "Mix | 5"),
                     ("column", "Amount | Price.: (12) | Mix: 5"),
                     ("item", "one item continued"), ("item", "two"), ("sentence", "Inventory: $5 ties")]
    row = units(md)[1]
    assert row.cells == (("Driver", "Price."), ("Amount", "(12)")) and row.context == "Bridge"


@pytest.mark.parametrize("text,value,resolution", [
    ("$1,234.56", 1234.56, 0.01), ("(1,234)", -1234, 1), ("-$12.3K", -12300, 100), ("$1.2 million", 1.2e6, 1e5),
    ("USD 5,475.54", 5475.54, 0.01), ("−42", -42, 1), ("$(8,683)", -8683, 1), ("3 thousand", 3000, 1000),
])
def test_figures_as_written(text, value, resolution):
    (f,) = figures(text)
    assert f.value == pytest.approx(value) and f.resolution == pytest.approx(resolution)


def test_ids_dates_and_percentages_are_not_amounts():
    found = figures("PA-53258 JE-10784 on 2026-09-30 at 10:30, FIN-2.2, 12% and $5")
    assert [(f.value, f.percent) for f in found] == [(12, True), (5, False)]


def test_rounding_is_accepted_as_far_as_the_precision_allows():
    exp = 12345.67
    assert matches(figures("$12,346")[0], exp) and matches(figures("$12.3K")[0], exp)
    # Two significant figures within their own rounding; trailing zeros may be rounding.
    assert matches(figures("$12K")[0], exp) and matches(figures("$12,300")[0], exp)
    assert not matches(figures("$10K")[0], exp) and not matches(figures("$12.4K")[0], exp)
    assert not matches(figures("$0.01M")[0], exp) and not matches(figures("$12,300")[0], exp, "dollar")
    assert not matches(figures("$12,346")[0], exp, "cent") and matches(figures("$12,345.67")[0], exp, "cent")
    assert not matches(figures("12,345.67%")[0], exp)


@pytest.mark.parametrize("text,value,resolution", [
    ("five thousand four hundred seventy-six dollars", 5476, 1), ("a thousand dollars", 1000, 1),
    ("twelve thousand three hundred and forty-six dollars", 12346, 1),
    ("five thousand four hundred seventy-five dollars and fifty-four cents", 5475.54, 0.01),
    ("one hundred twenty-three thousand four hundred fifty-six", 123456, 1),
])
def test_amounts_in_words(text, value, resolution):
    (f,) = figures(text)
    assert f.value == pytest.approx(value) and f.resolution == pytest.approx(resolution)


def test_counts_in_words_are_no_amounts():
    assert figures("one invoice, two holds and a one-off sale") == []


def test_a_bridge_across_binds_each_figure_to_its_column():
    md = ("| Price (Acme Valve, PA-1) | Write-off (VLV-1, ADJ-1) |\n|---|---|\n| (100) | (200) |\n")
    assert {n for n, v in grade(md, CLAIMS).items() if v.supported} == {"price", "write-off"}
    rotated = md.replace("PA-1", "X").replace("ADJ-1", "PA-1").replace("X", "ADJ-1")
    assert {n for n, v in grade(rotated, CLAIMS).items() if v.supported} == set()


def test_a_counterfactual_is_no_denial_and_turns_its_direction():
    ok = "Without the price increase on PA-1, Acme Valve's margin would have risen by another $100."
    assert grade(ok, CLAIMS[:1])["price"].supported
    assert not grade("Invoice PA-1 of Acme Valve for $100 is not a price increase.", CLAIMS[:1])["price"].supported
    wrong = "Without the price increase on PA-1, Acme Valve's margin would have fallen by another $100."
    assert not grade(wrong, CLAIMS[:1])["price"].supported


def test_a_name_part_of_another_partys_is_ambiguous():
    claim = Claim("bank", subject=("Keystone Fastener", "Keystone"), kind=("bank_change",))
    parties = ("Keystone Fastener", "Keystone State Supply")
    assert grade("Keystone Fastener's email asked to change bank details.", [claim], parties=parties)["bank"].supported
    assert not grade("Keystone's email asked to change bank details.", [claim], parties=parties)["bank"].supported
    assert not grade("Keystone State Supply's email asked to change bank details.", [claim],
                     parties=parties)["bank"].supported
    # Without the other party, "Keystone" names its vendor.
    assert grade("Keystone's email asked to change bank details.", [claim])["bank"].supported


def test_direction_is_the_word_nearest_the_measure():
    assert direction("a price increase that lowered margin by $5") == "down"
    assert direction("costs rose, so gross margin improved by $5") == "up"
    assert direction("the change is $5 (unfavourable)") == "down"
    assert direction("prices rose by $5") == ""
    # A driver's comparison of rates is no direction; a change "lower than" August's is.
    assert direction("it earned 28% against August's higher 57% margin, costing $5 of margin") == "down"
    assert direction("September margin was $5 lower than August's") == ""
    assert direction("September margin was $5 lower than August's", comparatives=True) == "down"


CLAIMS = [Claim("price", subject=("Acme Valve",), document=("PA-1",), kind=("price_increase",), amount=100.0,
                effect="down"),
          Claim("write-off", subject=("VLV-1",), document=("ADJ-1",), kind=("write_off",), amount=200.0,
                effect="down")]


@pytest.mark.parametrize("text,ok", [
    ("Acme Valve Co. raised prices on invoice PA-1, $100 of margin lost.", {"price"}),
    ("Acme Valve's invoice PA-1 ($100) is not a price increase.", set()),
    ("Acme Valve's price increase (PA-1) increased margin by $100.", set()),
    ("Acme Valve price increase PA-1 $100; VLV-1 written off on ADJ-1 for $200.", set()),
    ("- Acme Valve price increase PA-1 $100\n- VLV-1 written off on ADJ-1 for $200", {"price", "write-off"}),
    ("- Acme Valve price increase PA-1 $200\n- VLV-1 written off on ADJ-1 for $100", set()),
    ("## Write-off\n\nVLV-1 (ADJ-1): $200.", {"write-off"}),
])
def test_claims_bind_to_their_own_unit(text, ok):
    assert {n for n, v in grade(text, CLAIMS).items() if v.supported} == ok


def test_shared_units_bind_each_figure_to_its_nearest_claim():
    claims = [Claim("inv", subject=("inventory",), kind=("ties",), amount=10.0),
              Claim("ap", subject=("AP",), kind=("ties",), amount=20.0)]
    ok = grade("Inventory ($10) and AP ($20) both tie to their subledgers.", claims, exclusive=False)
    assert all(v.supported for v in ok.values())
    swapped = grade("Inventory ($20) and AP ($10) both tie.", claims, exclusive=False)
    assert not any(v.supported for v in swapped.values())
    deferred = grade("Inventory $10 ties; AP $20: tie-out still to be done.", claims, exclusive=False)
    assert deferred["inv"].supported and not deferred["ap"].supported
