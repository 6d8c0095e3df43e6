"""margin-bridge's text checks, both ways: answers a careful reviewer accepts under the
handbook (FIN-1.1, FIN-2.1 .. FIN-2.5) in other words, forms and structures pass; wrong and
gaming answers fail the checks they break. Over the generated truth of seeds 0-3 (margin falls
on 0-2 and rises on 3)."""
from __future__ import annotations

import math
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

TASK = "margin-bridge"
SEEDS = (0, 1, 2, 3)
MARGINS, PRICE, REBATE, MIX, WRITE_OFF, OTHER = ("margins and change stated", "price increase explained",
                                                 "rebate explained", "mix shift explained", "write-off explained",
                                                 "volume and other shown")
DRIVER_CHECKS = {"price": PRICE, "rebate": REBATE, "mix": MIX, "write_off": WRITE_OFF}
ALL = (MARGINS, PRICE, REBATE, MIX, WRITE_OFF, OTHER)


def usd(x: float) -> str:
    return f"${abs(x):,.2f}"


def whole(x: float) -> str:
    return f"${abs(x):,.0f}"


def kilo(x: float) -> str:
    """Three significant figures, as a manager's deck writes them."""
    a = abs(x)
    if a < 1000:
        return f"${a:,.0f}"
    if a < 10_000:
        return f"${a / 1000:.2f}K"
    if a < 100_000:
        return f"${a / 1000:.1f}K"
    return f"${a / 1000:.0f}K"


def coarse(x: float) -> str:
    """One significant figure: the scale of an amount, not the amount (numbers.py)."""
    a = abs(x)
    unit = 10 ** math.floor(math.log10(a))
    return f"${round(a / unit) * unit / 1000:g}K" if a >= 1000 else f"${round(a / unit) * unit:g}"


def two_sig(x: float, off: float = 0.0) -> str:
    """Two significant figures, as a deck rounds them ("$5.5K" for $5,475.54); `off` moves the
    figure by that many units of its last digit."""
    a = abs(x)
    e = math.floor(math.log10(a))
    unit = 10 ** (e - 1)
    v = (round(a / unit) + off) * unit
    return f"${v / 1000:.{max(0, 4 - e)}f}K" if a >= 1000 else f"${v:.0f}"


_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def spell(n: int) -> str:
    """A whole number below a million in words, as a person writes it out."""
    def small(k: int) -> str:
        out = []
        if k >= 100:
            out.append(f"{_ONES[k // 100]} hundred")
            k %= 100
        if k >= 20:
            out.append(_TENS[k // 10] + (f"-{_ONES[k % 10]}" if k % 10 else ""))
        elif k:
            out.append(_ONES[k])
        return " ".join(out)
    thousands, rest = divmod(n, 1000)
    return " ".join(x for x in (f"{small(thousands)} thousand" if thousands else "", small(rest)) if x) or "zero"


def words(x: float) -> str:
    """An amount in words, rounded to whole dollars."""
    return f"{spell(round(abs(x)))} dollars"


def paren(x: float) -> str:
    return f"({abs(x):,.2f})"


@dataclass
class Facts:
    """The scenario's truth as a writer of the answer knows it."""

    prior: float
    month: float
    change: float
    rate: float
    other: float
    d: dict[str, dict]

    @property
    def falls(self) -> bool:
        return self.change < 0


def facts(seed: int) -> tuple[Facts, dict]:
    t = truth(TASK, seed)
    p, f, v = t["planted"], t["facts"], t["values"]
    d = {
        "price": {"who": p["price"]["vendor"], "doc": p["price"]["invoice_no"], "erp": p["price"]["id"],
                  "je": v["price_docs"][-1], "amt": p["price"]["cents"] / 100},
        "rebate": {"who": p["rebate"]["customer"], "doc": p["rebate"]["entry"], "erp": p["rebate"]["agreement"],
                   "amt": p["rebate"]["cents"] / 100},
        "mix": {"who": p["mix"]["item"], "desc": v["mix_subject"][1], "cust": p["mix"]["customer"],
                "doc": p["mix"]["invoice"], "erp": p["mix"]["so"], "po": p["mix"]["customer_po"],
                "amt": p["mix"]["cents"] / 100, "rev": p["mix"]["revenue_cents"] / 100},
        "write_off": {"who": p["write_off"]["item"], "desc": v["write_off_subject"][1], "doc": p["write_off"]["adjustment"],
                      "erp": p["write_off"]["report"], "qty": p["write_off"]["qty"], "amt": p["write_off"]["cents"] / 100},
    }
    fx = Facts(prior=f["prior"]["margin"] / 100, month=f["month"]["margin"] / 100, change=f["change_cents"] / 100,
               rate=f["prior_rate"], other=f["volume_and_other_cents"] / 100, d=d)
    return fx, t


def head(f: Facts) -> str:
    verb = "fell" if f.falls else "rose"
    return (f"# Margin bridge August to September 2026\n\nGross margin was {usd(f.prior)} in August and "
            f"{usd(f.month)} in September: it {verb} by {usd(f.change)}.\n\n")


def other_line(f: Facts) -> str:
    sign = "-" if f.other < 0 else "+"
    return f"\nVolume and other: {sign}{usd(f.other)}.\n"


def driver_sentences(f: Facts, money: Callable[[float], str] = usd) -> dict[str, str]:
    d = f.d
    return {
        "price": f"{d['price']['who']} raised its prices from 1 September and billed the increase on invoice "
                 f"{d['price']['doc']}: an invoice price variance of {money(d['price']['amt'])} that reduced margin.",
        "rebate": f"{d['rebate']['who']} reached a retroactive rebate tier; journal entry {d['rebate']['doc']} accrued "
                  f"{money(d['rebate']['amt'])} against sales discounts, lowering margin by the same amount.",
        "mix": f"A one-off low-margin project sale of {d['mix']['who']} on invoice {d['mix']['doc']} shifted the mix, "
               f"costing {money(d['mix']['amt'])} of margin against August's rate.",
        "write_off": f"Damaged stock of {d['write_off']['who']} was written off on adjustment {d['write_off']['doc']}, "
                     f"{money(d['write_off']['amt'])} charged to inventory adjustments.",
    }


# ------------------------------------------------------------------------------ correct answers


def c_prose(f: Facts) -> str:
    s = driver_sentences(f)
    return head(f) + " ".join(s.values()) + "\n" + other_line(f)


def c_bullets_rounded(f: Facts) -> str:
    s = driver_sentences(f, whole)
    return head(f) + "## Drivers\n\n" + "\n".join(f"- {x}" for x in s.values()) + "\n" + \
        f"- Volume and other: {whole(f.other)} ({'unfavourable' if f.other < 0 else 'favourable'}).\n"


def c_table_parentheses(f: Facts) -> str:
    d = f.d
    rows = [("Vendor price increase", d["price"]["who"], f"invoice {d['price']['doc']}", d["price"]["amt"]),
            ("Customer rebate (retroactive tier)", d["rebate"]["who"], d["rebate"]["doc"], d["rebate"]["amt"]),
            ("Mix: one-off low-margin order", d["mix"]["cust"], d["mix"]["doc"], d["mix"]["amt"]),
            ("Inventory write-off", d["write_off"]["who"], d["write_off"]["doc"], d["write_off"]["amt"])]
    sign = "(" if f.falls else ""
    out = ["# Gross margin bridge", "", "| | Gross margin |", "|---|---:|", f"| August 2026 | {f.prior:,.2f} |",
           f"| September 2026 | {f.month:,.2f} |", f"| Change | {sign}{abs(f.change):,.2f}{')' if sign else ''} |", "",
           "| Driver | Vendor / customer / item | Document | Effect on margin ($) |", "|---|---|---|---:|"]
    out += [f"| {a} | {b} | {c} | ({x:,.2f}) |" for a, b, c, x in rows]
    out += [f"| Volume and other | | | {paren(f.other) if f.other < 0 else f'{f.other:,.2f}'} |"]
    return "\n".join(out) + "\n"


def c_kilo_bullets_erp_ids(f: Facts) -> str:
    d = f.d
    lines = [f"- Price increase — {d['price']['who']} ({d['price']['erp']}, journal {d['price']['je']}): "
             f"-{kilo(d['price']['amt'])} on margin.",
             f"- Rebate — {d['rebate']['who']}, rebate agreement {d['rebate']['erp']}: -{kilo(d['rebate']['amt'])}.",
             f"- Mix — {d['mix']['desc']} sold on sales order {d['mix']['erp']}: -{kilo(d['mix']['amt'])}.",
             f"- Write-off — {d['write_off']['desc']}, quality report {d['write_off']['erp']}: "
             f"-{kilo(d['write_off']['amt'])}."]
    return head(f) + "\n".join(lines) + f"\n- Volume and other: {'-' if f.other < 0 else '+'}{kilo(f.other)}.\n"


def c_headings(f: Facts) -> str:
    d = f.d
    return head(f) + (
        f"## Price increase\n\n{d['price']['who']} billed invoice no. {d['price']['doc']} for approx. "
        f"{usd(d['price']['amt'])} of variance on Sept. deliveries.\n\n"
        f"## Rebate\n\nJE {d['rebate']['doc']} accrues {usd(d['rebate']['amt'])} for {d['rebate']['who']}.\n\n"
        f"## Write-off\n\n{d['write_off']['qty']} units of {d['write_off']['who']} ({d['write_off']['doc']}) "
        f"cost {usd(d['write_off']['amt'])}.\n\n"
        f"## Mix\n\nInvoice {d['mix']['doc']} to {d['mix']['cust']}: {usd(d['mix']['amt'])}.\n\n"
        f"## Volume and other\n\n{'-' if f.other < 0 else ''}{usd(f.other)}.\n")


def c_other_order_co(f: Facts) -> str:
    d = f.d
    verb = "decreased" if f.falls else "increased"
    return (f"September gross margin of {usd(f.month)} compares with {usd(f.prior)} for August; margin {verb} by "
            f"{usd(f.change)}.\n\n"
            f"1. Write-off: adjustment {d['write_off']['doc']} wrote off {d['write_off']['who']} (water damage), "
            f"USD {d['write_off']['amt']:,.2f}.\n"
            f"2. Mix: {d['mix']['cust']} bought {d['mix']['who']} at project pricing (PO {d['mix']['po']}); the "
            f"diluted mix cost {usd(d['mix']['amt'])}.\n"
            f"3. Rebate: {d['rebate']['who']} Co. earned a retroactive volume rebate, accrued in {d['rebate']['doc']} "
            f"at {usd(d['rebate']['amt'])}.\n"
            f"4. Price: {d['price']['who']} Co. — prices rose 1 September (supplemental invoice {d['price']['doc']}), "
            f"{usd(d['price']['amt'])} of IPV.\n"
            f"5. Residual volume and other: {'-' if f.other < 0 else ''}{usd(f.other)}.\n")


def c_fell_from_to(f: Facts) -> str:
    verb, noun = ("fell", "a decrease") if f.falls else ("rose", "an increase")
    s = driver_sentences(f)
    return (f"Gross margin {verb} from {usd(f.prior)} in August to {usd(f.month)} in September, {noun} of "
            f"{usd(f.change)}.\n\n" + "\n\n".join(s.values()) + "\n" + other_line(f))


def c_minus_change_and_written_off(f: Facts) -> str:
    d = f.d
    sign = "-" if f.falls else "+"
    return (f"Gross margin, August: {usd(f.prior)}\n\nGross margin, September: {usd(f.month)}\n\n"
            f"Change: {sign}{usd(f.change)}\n\n"
            f"- The vendor {d['price']['who']} put through a price increase on invoice {d['price']['doc']} "
            f"({usd(d['price']['amt'])}).\n"
            f"- The rebate to {d['rebate']['who']} ({d['rebate']['doc']}) cost {usd(d['rebate']['amt'])}.\n"
            f"- Mix shift from {d['mix']['desc']} on {d['mix']['doc']}: {usd(d['mix']['amt'])}.\n"
            f"- {d['write_off']['desc']} written off via {d['write_off']['doc']}: {usd(d['write_off']['amt'])}.\n"
            f"- Volume and other: {usd(f.other)}.\n")


def c_mix_rounded_rate(f: Facts) -> str:
    """The mix effect from August's rate rounded to a hundredth of a percent (FIN-2.4 allows it)."""
    d = f.d
    rate = round(f.rate, 4)
    margin = d["mix"]["rev"] * f.rate - d["mix"]["amt"]
    effect = d["mix"]["rev"] * rate - margin
    s = driver_sentences(f)
    s["mix"] = (f"Mix: invoice {d['mix']['doc']} for {d['mix']['who']} earned {usd(margin)} where August's "
                f"{rate:.2%} would have earned {usd(margin + effect)}: {usd(effect)} less margin.")
    return head(f) + "\n".join(f"* {x}" for x in s.values()) + "\n" + other_line(f)


def c_numbered_usd_reduced(f: Facts) -> str:
    d = f.d
    return head(f) + (
        f"1) {d['price']['who']}'s price increase, billed on {d['price']['doc']}, reduced gross margin by "
        f"USD {d['price']['amt']:,.2f}.\n"
        f"2) The retroactive rebate for {d['rebate']['who']} ({d['rebate']['doc']}) reduced gross margin by "
        f"USD {d['rebate']['amt']:,.2f}.\n"
        f"3) The mix effect of the project order {d['mix']['erp']} ({d['mix']['who']}) reduced gross margin by "
        f"USD {d['mix']['amt']:,.2f}.\n"
        f"4) The write-off of {d['write_off']['who']} on {d['write_off']['doc']} reduced gross margin by "
        f"USD {d['write_off']['amt']:,.2f}.\n"
        f"5) Volume and other: {'-' if f.other < 0 else '+'}USD {abs(f.other):,.2f}.\n")


def c_terse_table(f: Facts) -> str:
    """Driver labels of one word, the vendor's ERP invoice id, signed whole dollars."""
    d = f.d
    sign = "-" if f.falls else "+"
    return (f"August GM: {whole(f.prior)}. September GM: {whole(f.month)}. Change: {sign}{whole(f.change)}.\n\n"
            "| Driver | Who | Doc | $ |\n|:--|:--|:--|--:|\n"
            f"| Price | {d['price']['who']} | {d['price']['erp']} | -{d['price']['amt']:,.0f} |\n"
            f"| Rebate | {d['rebate']['who']} | {d['rebate']['erp']} | -{d['rebate']['amt']:,.0f} |\n"
            f"| Mix | {d['mix']['desc']} | {d['mix']['po']} | -{d['mix']['amt']:,.0f} |\n"
            f"| Write-off | {d['write_off']['who']} | {d['write_off']['erp']} | -{d['write_off']['amt']:,.0f} |\n"
            f"| Volume/other | | | {'-' if f.other < 0 else '+'}{abs(f.other):,.0f} |\n")


def c_across_one_row(f: Facts) -> str:
    """The bridge laid out across: one column per driver, its header naming the driver, its party
    and document; one row of effects (the header binds each figure to its driver)."""
    d = f.d
    cols = [f"Price increase ({d['price']['who']}, {d['price']['doc']})",
            f"Rebate ({d['rebate']['who']}, {d['rebate']['doc']})",
            f"Mix ({d['mix']['who']}, {d['mix']['doc']})",
            f"Write-off ({d['write_off']['who']}, {d['write_off']['doc']})", "Volume and other"]
    vals = [paren(d[k]["amt"]) for k in ("price", "rebate", "mix", "write_off")]
    vals.append(paren(f.other) if f.other < 0 else f"{f.other:,.2f}")
    return head(f) + "Effect on margin ($):\n\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n| " + \
        " | ".join(vals) + " |\n"


def c_transposed_table(f: Facts) -> str:
    """Drivers as columns, what is said of them as rows (who, document, effect)."""
    d = f.d
    keys = ("price", "rebate", "mix", "write_off")
    return head(f) + "| | Price increase | Customer rebate | Mix | Inventory write-off |\n|---|---|---|---|---|\n" + \
        "| Who | " + " | ".join(d[k]["who"] for k in keys) + " |\n" + \
        "| Document | " + " | ".join(d[k]["doc"] for k in keys) + " |\n" + \
        "| Effect on margin | " + " | ".join(f"-{usd(d[k]['amt'])}" for k in keys) + " |\n" + other_line(f)


def c_amounts_in_words(f: Facts) -> str:
    """Every driver's amount written out in words, rounded to whole dollars."""
    return head(f) + "\n".join(f"- {x}" for x in driver_sentences(f, words).values()) + "\n" + other_line(f)


def c_two_significant_figures(f: Facts) -> str:
    """Amounts rounded to two significant figures, written "$5.5K", "about 5.5k", "$5.5 thousand"."""
    forms = [two_sig, lambda x: "about " + two_sig(x).lstrip("$").lower(),
             lambda x: two_sig(x).replace("K", " thousand")]
    s = driver_sentences(f)
    for i, k in enumerate(("price", "rebate", "mix", "write_off")):
        s[k] = s[k].replace(usd(f.d[k]["amt"]), forms[i % 3](f.d[k]["amt"]))
    return head(f) + "\n".join(f"- {x}" for x in s.values()) + "\n" + other_line(f)


def c_counterfactuals(f: Facts) -> str:
    """Each driver measured as what margin would have been without it."""
    d = f.d
    return head(f) + (
        f"- Without the price increase {d['price']['who']} billed on invoice {d['price']['doc']}, margin would "
        f"have been {usd(d['price']['amt'])} higher.\n"
        f"- Had it not been for the retroactive rebate to {d['rebate']['who']} (JE {d['rebate']['doc']}), margin "
        f"would have risen by another {usd(d['rebate']['amt'])}.\n"
        f"- Excluding the low-margin project sale of {d['mix']['who']} on {d['mix']['doc']}, the mix would have "
        f"added {usd(d['mix']['amt'])} more margin.\n"
        f"- But for the write-off of {d['write_off']['who']} on adjustment {d['write_off']['doc']}, margin would "
        f"have been {usd(d['write_off']['amt'])} higher.\n") + other_line(f)


CORRECT: dict[str, Callable[[Facts], str]] = {
    "bridge across one row": c_across_one_row, "transposed table": c_transposed_table,
    "amounts in words": c_amounts_in_words, "two significant figures": c_two_significant_figures,
    "counterfactuals": c_counterfactuals,
    "terse table": c_terse_table,
    "prose": c_prose, "bullets rounded to dollars": c_bullets_rounded, "table with parentheses": c_table_parentheses,
    "K amounts and ERP ids": c_kilo_bullets_erp_ids, "headings and abbreviations": c_headings,
    "other order, Co. suffix": c_other_order_co, "fell from .. to": c_fell_from_to,
    "label lines, written off": c_minus_change_and_written_off, "mix from a rounded rate": c_mix_rounded_rate,
    "numbered, USD, reduced": c_numbered_usd_reduced,
}


# ------------------------------------------------------------------------------ wrong answers


def from_sentences(f: Facts, s: dict[str, str], extra: str = "", other: str | None = None) -> str:
    return head(f) + "\n".join(f"- {x}" for x in s.values()) + "\n" + (other_line(f) if other is None else other) + extra


NEGATED = {
    "price": "{who}'s invoice {doc} for {amt} is not a price increase: it corrects a billing error.",
    "rebate": "Journal entry {doc} for {who} ({amt}) is not a rebate, and no rebate tier applies.",
    "mix": "Invoice {doc} for {who} ({amt}) was not a mix shift: the order carried a normal margin.",
    "write_off": "Adjustment {doc} for {who} ({amt}) was not a write-off; nothing was written off.",
}
WRONG_WAY = {
    "price": "{who} cut its prices on invoice {doc}, a price change that increased margin by {amt}.",
    "rebate": "The rebate reversal for {who} on {doc} increased margin by {amt}.",
    "mix": "The mix improved: invoice {doc} for {who} added {amt} to margin.",
    "write_off": "Reversing the write-off of {who} ({doc}) improved margin by {amt}.",
}
NO_DOC = {
    "price": "{who} raised its prices in September, an invoice price variance of {amt}.",
    "rebate": "{who} earned a retroactive rebate of {amt}.",
    "mix": "A low-margin sale of {who} shifted the mix by {amt}.",
    "write_off": "Stock of {who} was written off, {amt}.",
}


def _fill(f: Facts, k: str, template: str, amt: str | None = None) -> str:
    d = f.d[k]
    return template.format(who=d["who"], doc=d["doc"], amt=amt or usd(d["amt"]))


def w_replace(k: str, template: dict[str, str]) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        s[k] = _fill(f, k, template[k])
        return from_sentences(f, s)
    return fn


def w_missing(k: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        del s[k]
        return from_sentences(f, s)
    return fn


def w_amount(k: str, how: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        a = f.d[k]["amt"]
        written = {"ten percent off": usd(a * 1.1), "too coarse": coarse(a),
                   "two percent off": usd(a * 1.02)}[how]
        s = driver_sentences(f)
        s[k] = s[k].replace(usd(a), written)
        return from_sentences(f, s)
    return fn


def w_amount_elsewhere(k: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        s[k] = _fill(f, k, NO_DOC[k], amt="a noticeable amount") + f" (see {f.d[k]['doc']})"
        return from_sentences(f, s, extra=f"\nAmounts checked: {usd(f.d[k]['amt'])}.\n")
    return fn


def w_wrong_subject(k: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        s[k] = s[k].replace(f.d[k]["who"], "Harbor Industrial Partners")
        return from_sentences(f, s)
    return fn


def w_foreign_doc(k: str) -> Callable[[Facts], str]:
    order = ["price", "rebate", "mix", "write_off"]
    nxt = order[(order.index(k) + 1) % 4]

    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        s[k] = s[k].replace(f.d[k]["doc"], f.d[nxt]["doc"])
        return from_sentences(f, s)
    return fn


def w_list_everything(f: Facts) -> str:
    d = f.d
    return head(f) + ("The drivers are a price increase, a rebate, a mix shift and a write-off involving "
                      + ", ".join(f"{d[k]['who']} ({d[k]['doc']})" for k in d) + ", for "
                      + ", ".join(usd(d[k]["amt"]) for k in d) + f", and volume and other of {usd(f.other)}.\n")


def w_swapped_amounts(f: Facts) -> str:
    d = f.d
    s = driver_sentences(f)
    for a, b in (("price", "rebate"), ("mix", "write_off")):
        s[a], s[b] = s[a].replace(usd(d[a]["amt"]), usd(d[b]["amt"])), s[b].replace(usd(d[b]["amt"]), usd(d[a]["amt"]))
    return from_sentences(f, s)


def w_rotated_documents(f: Facts) -> str:
    d = f.d
    keys = list(d)
    kinds = {"price": "Price increase", "rebate": "Rebate", "mix": "Mix", "write_off": "Write-off"}
    rows = [f"| {kinds[k]} | {d[k]['who']} | {d[keys[(i + 1) % 4]]['doc']} | ({d[k]['amt']:,.2f}) |"
            for i, k in enumerate(keys)]
    return head(f) + "| Driver | Party | Document | Amount |\n|---|---|---|---|\n" + "\n".join(rows) + "\n" + other_line(f)


def w_writeoff_as_price(f: Facts) -> str:
    d = f.d
    s = driver_sentences(f)
    del s["write_off"]
    total = d["price"]["amt"] + d["write_off"]["amt"]
    s["price"] = (f"Vendor price increases: {d['price']['who']} (invoice {d['price']['doc']}) and the higher cost of "
                  f"stock raised costs by {usd(total)}, lowering margin.")
    return from_sentences(f, s)


def w_totals_only(f: Facts) -> str:
    return head(f)


def w_margins(how: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        verb = "fell" if f.falls else "rose"
        wrong_verb = "rose" if f.falls else "fell"
        heads = {
            "swapped months": f"Gross margin was {usd(f.month)} in August and {usd(f.prior)} in September: it {verb} "
                              f"by {usd(f.change)}.",
            "wrong direction": f"Gross margin was {usd(f.prior)} in August and {usd(f.month)} in September: it "
                               f"{wrong_verb} by {usd(f.change)}.",
            # Unsigned reads as a rise: wrong where margin fell; where it rose, parentheses are wrong.
            "no direction": f"Gross margin was {usd(f.prior)} in August and {usd(f.month)} in September; the change "
                            f"is {usd(f.change) if f.falls else paren(f.change)}.",
            "change missing": f"Gross margin was {usd(f.prior)} in August and {usd(f.month)} in September.",
            "change wrong": f"Gross margin was {usd(f.prior)} in August and {usd(f.month)} in September: it {verb} "
                            f"by {usd(f.change * 1.2)}.",
            "no months": f"Gross margin figures: {usd(f.prior)}, {usd(f.month)}, {usd(f.change)}.",
            "prior missing": f"Gross margin was {usd(f.month)} in September, having {verb} by {usd(f.change)}.",
            "plus sign": f"Gross margin: August {usd(f.prior)}, September {usd(f.month)}, change "
                         f"{'+' if f.falls else '-'}{usd(f.change)}.",
            "improved": f"Gross margin was {usd(f.prior)} in August and {usd(f.month)} in September; margin "
                        f"{'improved' if f.falls else 'worsened'} by {usd(f.change)}.",
            "too coarse": f"Gross margin was about ${f.prior / 1e6:.1f}M in August and ${f.month / 1e6:.1f}M in "
                          f"September, {verb} by {usd(f.change)}.",
            "favourable": f"Gross margin was {usd(f.prior)} in August and {usd(f.month)} in September; the change of "
                          f"{usd(f.change)} in margin is {'favourable' if f.falls else 'unfavourable'}.",
        }
        s = driver_sentences(f)
        return "# Margin bridge\n\n" + heads[how] + "\n\n" + "\n".join(f"- {x}" for x in s.values()) + "\n" + \
            other_line(f)
    return fn


def w_other(how: str) -> Callable[[Facts], str]:
    def fn(f: Facts) -> str:
        sign, wrong = ("-", "+") if f.other < 0 else ("+", "-")
        lines = {
            "missing": "",
            "wrong sign": f"\nVolume and other: {wrong}{usd(f.other)}.\n",
            "wrong amount": f"\nVolume and other: {sign}{usd(abs(f.other) + 500)}.\n",
            "too coarse": f"\nVolume and other: {sign}{coarse(f.other)}.\n",
            "not computed": "\nVolume and other: not computed.\n",
            "wrong word": f"\nVolume and other: {usd(f.other)} "
                          f"({'favourable' if f.other < 0 else 'unfavourable'}).\n",
            "in a driver": "",
            "zero": "\nVolume and other: $0.00.\n",
        }
        s = driver_sentences(f)
        if how == "in a driver":
            s["price"] += f" Volume and other came to {usd(f.other)}."
        return from_sentences(f, s, other=lines[how])
    return fn


def w_across_rotated(f: Facts) -> str:
    """The bridge across, each driver's header naming the next driver's document."""
    d = f.d
    keys = ("price", "rebate", "mix", "write_off")
    label = {"price": "Price increase", "rebate": "Rebate", "mix": "Mix", "write_off": "Write-off"}
    cols = [f"{label[k]} ({d[k]['who']}, {d[keys[(i + 1) % 4]]['doc']})" for i, k in enumerate(keys)]
    return head(f) + "| " + " | ".join(cols) + " |\n|" + "---|" * 4 + "\n| " + \
        " | ".join(paren(d[k]["amt"]) for k in keys) + " |\n" + other_line(f)


def w_across_everything(f: Facts) -> str:
    """One row that lists every driver, party, document and amount in each of its cells."""
    d = f.d
    return head(f) + "| Drivers | Parties | Documents | Amounts |\n|---|---|---|---|\n| price increase, rebate, mix, " \
        "write-off | " + ", ".join(d[k]["who"] for k in d) + " | " + ", ".join(d[k]["doc"] for k in d) + " | " + \
        ", ".join(paren(d[k]["amt"]) for k in d) + " |\n" + other_line(f)


def w_counterfactual_wrong_way(k: str) -> Callable[[Facts], str]:
    """"Without X, margin would have fallen": X raised margin, which is the wrong way."""
    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        d = f.d[k]
        s[k] = (f"Without the {k.replace('_', '-')} ({d['who']}, {d['doc']}), margin would have fallen by a further "
                f"{usd(d['amt'])}.")
        if k == "price":
            s[k] = s[k].replace("the price", "the price increase")
        return from_sentences(f, s)
    return fn


def w_amount_words(k: str) -> Callable[[Facts], str]:
    """The driver's amount in words, ten percent off."""
    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        s[k] = s[k].replace(usd(f.d[k]["amt"]), words(f.d[k]["amt"] * 1.1))
        return from_sentences(f, s)
    return fn


def w_amount_outside_rounding(k: str) -> Callable[[Facts], str]:
    """Two significant figures, but the last digit is off by more than its rounding."""
    def fn(f: Facts) -> str:
        s = driver_sentences(f)
        s[k] = s[k].replace(usd(f.d[k]["amt"]), two_sig(f.d[k]["amt"], off=-1))
        return from_sentences(f, s)
    return fn


WRONG: dict[str, tuple[Callable[[Facts], str], frozenset[str]]] = {
    "across, rotated documents": (w_across_rotated, frozenset({PRICE, REBATE, MIX, WRITE_OFF})),
    "across, everything in one row": (w_across_everything, frozenset({PRICE, REBATE, MIX, WRITE_OFF})),
    "list everything": (w_list_everything, frozenset({PRICE, REBATE, MIX, WRITE_OFF, OTHER})),
    "swapped amounts": (w_swapped_amounts, frozenset({PRICE, REBATE, MIX, WRITE_OFF})),
    "rotated documents": (w_rotated_documents, frozenset({PRICE, REBATE, MIX, WRITE_OFF})),
    "write-off folded into price": (w_writeoff_as_price, frozenset({PRICE, WRITE_OFF})),
    "totals only": (w_totals_only, frozenset({PRICE, REBATE, MIX, WRITE_OFF, OTHER})),
}
for _k, _check in DRIVER_CHECKS.items():
    WRONG[f"{_k}: negated"] = (w_replace(_k, NEGATED), frozenset({_check}))
    WRONG[f"{_k}: wrong direction"] = (w_replace(_k, WRONG_WAY), frozenset({_check}))
    WRONG[f"{_k}: no document"] = (w_replace(_k, NO_DOC), frozenset({_check}))
    WRONG[f"{_k}: missing"] = (w_missing(_k), frozenset({_check}))
    for _how in ("ten percent off", "too coarse", "two percent off"):
        WRONG[f"{_k}: amount {_how}"] = (w_amount(_k, _how), frozenset({_check}))
    WRONG[f"{_k}: amount only elsewhere"] = (w_amount_elsewhere(_k), frozenset({_check}))
    WRONG[f"{_k}: wrong party"] = (w_wrong_subject(_k), frozenset({_check}))
    WRONG[f"{_k}: another driver's document"] = (w_foreign_doc(_k), frozenset({_check}))
    WRONG[f"{_k}: counterfactual the wrong way"] = (w_counterfactual_wrong_way(_k), frozenset({_check}))
    WRONG[f"{_k}: amount in words ten percent off"] = (w_amount_words(_k), frozenset({_check}))
    WRONG[f"{_k}: two figures, off by more than their rounding"] = (w_amount_outside_rounding(_k), frozenset({_check}))
for _how in ("swapped months", "wrong direction", "no direction", "change missing", "change wrong", "no months",
             "prior missing", "plus sign", "improved", "too coarse", "favourable"):
    WRONG[f"margins: {_how}"] = (w_margins(_how), frozenset({MARGINS}))
for _how in ("missing", "wrong sign", "wrong amount", "too coarse", "not computed", "wrong word", "in a driver",
             "zero"):
    WRONG[f"other: {_how}"] = (w_other(_how), frozenset({OTHER} | ({PRICE} if _how == "in a driver" else set())))


@pytest.fixture(scope="module", params=SEEDS)
def seeded(request) -> tuple[Facts, dict, sqlite3.Connection]:
    f, t = facts(request.param)
    return f, text_checks(TASK, t), master_db(TASK, request.param)


def test_every_text_check_has_ten_answers_each_way():
    assert_table_sizes(CORRECT, WRONG, ALL)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_correct_answer_passes_every_text_check(seeded, name, tmp_path):
    f, checks, db = seeded
    assert set(checks) == set(ALL)
    got = verdicts(checks, "answer.md", CORRECT[name](f), tmp_path, db)
    assert_passes_all(got)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_answer_fails_the_checks_it_breaks(seeded, name, tmp_path):
    f, checks, db = seeded
    fn, fails = WRONG[name]
    got = verdicts(checks, "answer.md", fn(f), tmp_path, db)
    assert_fails_exactly(got, fails)
