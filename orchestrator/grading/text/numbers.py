"""Reading figures the way people write them, and comparing them with an expected amount.

`figures(text)` finds every figure: thousands separators, a `$` (before or after a minus),
`K`/`k`/`thousand`, `M`/`m`/`mn`/`million`, `bn`/`billion`, parentheses or a leading minus for
a negative, a trailing `%` for a percentage. Ids (`PA-12345`, `JE-10784`), dates
(`2026-09-30`, `30/09/2026`) and account numbers in an id are not figures. Each figure keeps
its *resolution* (what its last written digit is worth: `$12.3K` is written to 100 dollars),
so `matches` can accept a rounded figure whose rounding range holds the truth.

Precision (per expected figure, from the handbook): `cent` (written to the cent), `dollar`
(whole dollars or finer) and `reviewer` (the default where the handbook sets none: whole
dollars, or three significant figures for large amounts — `$12.3K` for $12,345.67).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

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

    @property
    def magnitude(self) -> float:
        """The absolute value."""
        return abs(self.value)


def figures(text: str) -> list[Figure]:
    """Every figure written in `text`, in order (ids, dates and times are skipped)."""
    out: list[Figure] = []
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
        out.append(Figure(value=-value if neg else value, resolution=resolution, signed=signed,
                          percent=bool(m.group("pct")), currency=bool(m.group("cur")), start=start, end=m.end(),
                          text=m.group(0).strip()))
    return out


def allowed_resolution(expected: float, precision: str) -> float:
    """The coarsest resolution a figure for `expected` may be written at."""
    if precision == "cent":
        return 0.01
    if precision == "dollar":
        return 1.0
    if precision == "reviewer":
        # Three significant figures for large amounts, whole dollars at least.
        return max(1.0, 10 ** math.floor(math.log10(max(abs(expected), 1))) / 100)
    raise ValueError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")


def matches(fig: Figure, expected: float, precision: str = "reviewer", abs_tol: float = 0.0,
            rel_tol: float = 0.0) -> bool:
    """The figure states `expected` (by magnitude): its rounding range, widened by the declared
    tolerance, holds the expected value, and it is written at least as finely as `precision`."""
    if fig.percent:
        return False
    if fig.resolution > allowed_resolution(expected, precision) + 1e-9:
        return False
    half = fig.resolution / 2
    tol = max(abs_tol, rel_tol * abs(expected))
    return abs(fig.magnitude - abs(expected)) <= half + tol + 1e-9


def states_exactly(fig: Figure, expected: float) -> bool:
    """The figure is `expected` at the precision it is written at (used to see whether a unit
    names another claim's amount)."""
    if fig.percent or expected == 0:
        return False
    if fig.resolution > max(1.0, abs(expected) / 100):
        return False  # too coarse to name one amount rather than another
    return abs(fig.magnitude - abs(expected)) <= fig.resolution / 2 + 1e-9
