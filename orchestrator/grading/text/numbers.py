"""Reading figures the way people write them, and comparing them with an expected amount.

`figures(text)` finds every figure: thousands separators, a `$` (before or after a minus),
`K`/`k`/`thousand`, `M`/`m`/`mn`/`million`, `bn`/`billion`, parentheses or a leading minus for
a negative, a trailing `%` for a percentage, and amounts written in words ("five thousand four
hundred seventy-five dollars", "… and fifty-four cents"; parsed by text2num). Ids (`PA-12345`,
`JE-10784`), dates (`2026-09-30`, `30/09/2026`) and account numbers in an id are not figures.
Each figure keeps its *resolution* (what its last written digit is worth: `$12.3K` is written to
100 dollars) and, for a whole figure ending in zeros, its *rounding* (what its last non-zero
digit is worth: "$5,500" may be exact or rounded to the hundred), so `matches` can accept a
rounded figure whose rounding range holds the truth.

Precision (per expected figure, from the handbook): `cent` (written to the cent), `dollar`
(whole dollars or finer) and `reviewer`, the default where the handbook sets none. A reviewer
takes an amount rounded to the unit its writer chose ("$5.5K" for $5,475.54), as long as the
truth lies within that rounding (half a unit of its last digit, "$5.4K" is off; a whole figure's
trailing zeros may be its rounding, "$5,500") and it keeps two significant figures (or whole
dollars): one significant figure ("$5K", "$0.01M") gives the scale of an amount, not the amount,
and could stand for the driver next to it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from text_to_num import text2num

PRECISIONS = ("cent", "dollar", "reviewer")

_SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "mm": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}
_FIGURE = re.compile(
    r"""(?P<open>\()?\s*
        (?P<sign>[-−–+])?\s*
        (?P<cur>\$|USD\s?|US\$)?\s*
        (?P<sign2>[-−+])?\s*
        (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
        (?:\s?(?P<scale>thousand|million|billion|mn|bn|mm|[kKmM])(?![A-Za-z]))?
        (?P<pct>\s?%|\s?percent\b|\s?pct\b)?
        \s*(?P<close>\))?""",
    re.VERBOSE)
_UNIT_WORDS = ("thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|eleven|twelve|zero|one|two|three|"
               "four|five|six|seven|eight|nine|ten")
_TENS_WORDS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_SCALE_WORDS = "hundred|thousand|million|billion"
_WORD = rf"(?:(?:{_TENS_WORDS})(?:\s*-\s*|\s+)(?:{_UNIT_WORDS})\b|(?:{_TENS_WORDS})|(?:{_UNIT_WORDS}))"
_WORD_OR_SCALE = rf"(?:{_WORD}|(?:{_SCALE_WORDS}))"
# An amount in words: it starts with a number word (or "a" before a scale word), runs on through
# number words, scale words and "and", and must carry a scale word or a currency word to be an
# amount ("one invoice", "two holds" are counts, not figures).
_WORDS = re.compile(
    rf"""\b(?P<words>(?:a(?=\s+(?:{_SCALE_WORDS})\b)|{_WORD}\b)
        (?:(?:\s+and\s+|\s*-\s*|\s+){_WORD_OR_SCALE}\b)*)
        (?:\s+(?P<cur>dollars?|usd|bucks)\b)?
        (?:\s+and\s+(?P<cents>{_WORD}|\d{{1,2}})\s+cents?\b)?""",
    re.IGNORECASE | re.VERBOSE)
# A digit run glued to letters, a hyphen, a slash or a dot on its left is part of an id or a date.
_ID_LEFT = re.compile(r"[A-Za-z0-9_/#.:-]$")
_ID_RIGHT = re.compile(r"^(?:[A-Za-z_]|[-/]\d|\.\d{1,2}\.|:\d)")


@dataclass(frozen=True)
class Figure:
    """One figure as written: its value, sign, resolution and where it stands in the text."""

    value: float          # signed (a negative is written with parentheses or a minus)
    resolution: float     # what the last written digit is worth (0.01 for cents, 100 for $12.3K)
    signed: int           # -1 written negative, +1 written with '+', 0 unsigned
    percent: bool
    currency: bool
    start: int
    end: int
    text: str
    rounding: float = 0.0  # what its last non-zero digit is worth, for a whole figure ending in zeros

    @property
    def magnitude(self) -> float:
        """The absolute value."""
        return abs(self.value)


def _rounding(digits: str, resolution: float) -> float:
    """A whole figure's trailing zeros may be rounding ("$5,500", "$120K"): what its last
    non-zero digit is worth (its resolution when it has decimals or no trailing zero)."""
    if "." in digits or not digits.strip("0"):
        return resolution
    return resolution * 10 ** (len(digits) - len(digits.rstrip("0")))


def _word_value(words: str) -> int | None:
    """The value of a run of number words, or None when it is no number ("one two")."""
    w = re.sub(r"^a\s+", "one ", words.strip(), flags=re.IGNORECASE)
    w = re.sub(r"\s+and\s+", " ", w, flags=re.IGNORECASE)
    w = re.sub(r"\s*-\s*", "-", " ".join(w.split())).lower()
    try:
        return int(text2num(w, "en"))
    except ValueError:
        return None


def _word_figures(text: str) -> list[Figure]:
    """Amounts written in words ("five thousand four hundred seventy-five dollars")."""
    out: list[Figure] = []
    for m in _WORDS.finditer(text):
        words = m.group("words")
        if not (m.group("cur") or re.search(rf"\b(?:{_SCALE_WORDS})\b", words, re.IGNORECASE)):
            continue
        value = _word_value(words)
        if value is None:
            continue
        cents_text = m.group("cents")
        cents = (int(cents_text) if cents_text.isdigit() else _word_value(cents_text)) if cents_text else 0
        if cents is None or cents > 99:
            continue
        amount = value + cents / 100
        resolution = 0.01 if cents_text else 1.0
        end = m.end()
        percent = bool(re.match(r"\s*(?:%|percent\b|per cent\b)", text[end:], re.IGNORECASE))
        out.append(Figure(value=float(amount), resolution=resolution, signed=0, percent=percent,
                          currency=bool(m.group("cur")), start=m.start(), end=end, text=text[m.start():end],
                          rounding=resolution if cents_text else _rounding(str(value), resolution)))
    return out


def figures(text: str) -> list[Figure]:
    """Every figure written in `text`, in order (ids, dates and times are skipped)."""
    words = _word_figures(text)
    out: list[Figure] = list(words)
    for m in _FIGURE.finditer(text):
        num = m.group("num")
        nstart = m.start("num")
        before = text[:nstart].rstrip(" $") if m.group("cur") else text[:nstart]
        if not m.group("cur") and not m.group("sign") and not m.group("open") and _ID_LEFT.search(before):
            continue
        if m.group("sign") and not m.group("cur") and _ID_LEFT.search(text[:m.start("sign")]):
            continue  # "PA-12345": the hyphen joins an id, it is no minus
        if not m.group("scale") and _ID_RIGHT.match(text[m.end("num"):]):
            continue
        scale_word = (m.group("scale") or "").lower()
        if scale_word == "m" and m.group("scale") == "m" and not m.group("cur"):
            scale_word = ""  # "12 m" without a currency is more likely metres than millions
        scale = _SCALES.get(scale_word, 1.0)
        digits = num.replace(",", "")
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        value = float(digits) * scale
        resolution = (10 ** -decimals) * scale
        neg = (m.group("open") and m.group("close")) or (m.group("sign") or "") in "-−–" and m.group("sign") \
            or (m.group("sign2") or "") in "-−" and m.group("sign2")
        plus = (m.group("sign") == "+" or m.group("sign2") == "+") and not neg
        signed = -1 if neg else (1 if plus else 0)
        start = m.start("open") if m.group("open") and m.group("close") else m.start()
        if any(w.start <= m.start("num") < w.end for w in words):
            continue  # the cents of an amount in words ("… dollars and 54 cents")
        out.append(Figure(value=-value if neg else value, resolution=resolution, signed=signed,
                          percent=bool(m.group("pct")), currency=bool(m.group("cur")), start=start, end=m.end(),
                          text=m.group(0).strip(), rounding=_rounding(digits, resolution)))
    return sorted(out, key=lambda f: f.start)


def allowed_resolution(expected: float, precision: str) -> float:
    """The coarsest resolution a figure for `expected` may be written at."""
    if precision == "cent":
        return 0.01
    if precision == "dollar":
        return 1.0
    if precision == "reviewer":
        # Two significant figures at least, or whole dollars (the module docstring says why).
        return max(1.0, 10 ** (math.floor(math.log10(max(abs(expected), 1))) - 1))
    raise ValueError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")


def _within(fig: Figure, expected: float, coarsest: float, tol: float = 0.0) -> bool:
    """The figure, read at its resolution or at any coarser rounding its trailing zeros allow up
    to `coarsest`, holds `expected` within half its last unit (plus `tol`)."""
    unit = fig.resolution
    if unit > coarsest + 1e-9:
        return False
    while unit * 10 <= min(fig.rounding, coarsest) + 1e-9:
        unit *= 10
    return abs(fig.magnitude - abs(expected)) <= unit / 2 + tol + 1e-9


def matches(fig: Figure, expected: float, precision: str = "reviewer", abs_tol: float = 0.0,
            rel_tol: float = 0.0) -> bool:
    """The figure states `expected` (by magnitude): its rounding range, widened by the declared
    tolerance, holds the expected value, and it is written at least as finely as `precision`."""
    if fig.percent:
        return False
    return _within(fig, expected, allowed_resolution(expected, precision), max(abs_tol, rel_tol * abs(expected)))


def states_exactly(fig: Figure, expected: float) -> bool:
    """The figure is `expected` at the precision it is written at, no coarser than a reviewer
    takes (used to see whether a unit names another claim's amount)."""
    if fig.percent or expected == 0:
        return False
    return _within(fig, expected, allowed_resolution(expected, "reviewer"))
