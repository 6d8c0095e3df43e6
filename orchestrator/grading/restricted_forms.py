"""Restricted values in whatever form they are written (§7.2, issue 22).

A restricted value is found in a text however it is written: the text is brought to one
canonical form before matching —

- Unicode NFKC, every decimal digit form (Arabic-Indic, Devanagari, fullwidth, …) mapped to
  ASCII, format and zero-width characters and combining marks removed, case folded;
- digits spelled out in words (``four four one seven``, ``double two``, ``forty-one``) turned
  into digits;
- common encodings decoded first and matched as well: base64, hex, URL-encoding, HTML
  entities, ``\\uXXXX``/``\\xXX`` escapes, quoted-printable (two levels deep).

Digit values (account and routing numbers, tax ids, phones) are matched on *segments*: the
maximal runs of digits of a text. The last four digits of a value stay allowed; a disclosure is

1. a segment holding more than four consecutive digits of the value (so a dropped leading zero
   or the last six digits are caught), or the whole value reversed — a reversed *part* is not
   a disclosure: five digits of a value backwards turn up in amounts and ids by chance
   (``$829.88`` holds ``…82988…`` of an account read backwards) and tell nobody anything;
2. consecutive whole segments that together spell more than four consecutive digits of it —
   any separators between them (``4417  2290 - 1183``, dots, slashes, line breaks, masks),
   and across messages: the streams of everything one reader can read are matched as one, so
   a value sent in parts is found. Whole segments only, so ``V-0190 ****1183`` (an id beside
   the allowed last four) is not read as ``…01183``; a one-digit segment joins only a range
   of three or more segments (``4 4 1 7 …``) and segments joined across words, masks or a
   message boundary need three digits each — so ``1) ****1183`` stays a list item — and may
   have short numbers between them (``part 1: 4417``, ``part 2: 2290``).

Text values (addresses) match case-insensitively with any punctuation and spacing; amounts
(salaries) match as an amount with cents however it is grouped.
"""
from __future__ import annotations

import base64
import binascii
import html
import quopri
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import unquote_plus

ALLOWED_DIGITS = 4            # the last four digits (and any four) are not a disclosure
JOIN_MIN_ACROSS_BREAK = 3     # digits each segment needs to join across words/masks/messages
MASK_CHARS = "*•●·#"          # masking characters: a break, not a separator
SKIPPABLE_DIGITS = 2          # a segment this short, after a break, may sit between two parts

_UNITS = {"zero": "0", "oh": "0", "nought": "0", "nil": "0", "one": "1", "two": "2", "three": "3",
          "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9"}
_TEENS = {"ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14", "fifteen": "15",
          "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19"}
_TENS = {"twenty": "2", "thirty": "3", "forty": "4", "fourty": "4", "fifty": "5", "sixty": "6",
         "seventy": "7", "eighty": "8", "ninety": "9"}
_REPEAT = {"double": 2, "triple": 3}
_W = "|".join(sorted(_UNITS, key=len, reverse=True))
_NONZERO = "|".join(sorted(set(_UNITS) - {"zero", "oh", "nought", "nil"}, key=len, reverse=True))
_TENS_UNIT = re.compile(rf"\b({'|'.join(_TENS)})(?:[\s\-]+({_NONZERO}))?\b")
_REPEATED = re.compile(rf"\b(double|triple)[\s\-]+({_W})\b")
_WORD_DIGIT = re.compile(rf"\b({_W}|{'|'.join(_TEENS)})\b")
_SEGMENT = re.compile(r"\d+")
_AMOUNT = re.compile(r"\d{1,3}(?:[,\s.']\d{3})+[.,]\d{2}(?!\d)|\d+[.,]\d{2}(?!\d)")

_B64 = re.compile(r"[A-Za-z0-9+/_\-]{8,}={0,2}")
_HEX = re.compile(r"(?:0x|\\x)?[0-9A-Fa-f]{2}(?:[\s:,\-]?(?:0x|\\x)?[0-9A-Fa-f]{2}){3,}")
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})|\\U([0-9A-Fa-f]{8})")


def _strip_invisible(text: str) -> str:
    """NFKC, digit forms to ASCII, format/zero-width characters and combining marks removed."""
    out = []
    for ch in unicodedata.normalize("NFKC", text):
        cat = unicodedata.category(ch)
        if cat in ("Cf", "Mn", "Me"):
            continue
        if cat == "Nd":
            out.append(str(unicodedata.decimal(ch)))
        else:
            out.append(ch)
    return "".join(out)


def spelled_to_digits(text: str) -> str:
    """Digits written as (English) words replaced by digits; `text` is already case folded."""
    text = _REPEATED.sub(lambda m: _UNITS[m.group(2)] * _REPEAT[m.group(1)], text)
    text = _TENS_UNIT.sub(lambda m: _TENS[m.group(1)] + (_UNITS[m.group(2)] if m.group(2) else "0"), text)
    return _WORD_DIGIT.sub(lambda m: _UNITS.get(m.group(1)) or _TEENS[m.group(1)], text)


def canonical(text: str) -> str:
    """The one form every text and value is matched in (see the module docstring)."""
    return spelled_to_digits(_strip_invisible(text).casefold())


def _printable(s: str) -> bool:
    return bool(s) and all(ch.isprintable() or ch in "\r\n\t" for ch in s)


def _bytes_text(raw: bytes) -> str | None:
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return s if _printable(s) else None


def _decode_once(text: str) -> list[str]:
    out: list[str] = []
    if "%" in text:
        out.append(unquote_plus(text))
    if "&" in text:
        out.append(html.unescape(text))
    if "\\" in text:
        out.append(_ESCAPE.sub(lambda m: chr(int(next(g for g in m.groups() if g), 16)), text))
    if re.search(r"=[0-9A-Fa-f]{2}", text):
        s = _bytes_text(quopri.decodestring(text.encode("utf-8", "replace")))
        if s:
            out.append(s)
    squeezed = re.sub(r"\s+", "", text)
    tokens = set(_B64.findall(text))
    if _B64.fullmatch(squeezed):
        tokens.add(squeezed)  # one base64 blob wrapped over lines
    for tok in sorted(tokens):
        for alt in (tok, tok.replace("-", "+").replace("_", "/")):
            try:
                s = _bytes_text(base64.b64decode(alt + "=" * (-len(alt) % 4), validate=True))
            except (binascii.Error, ValueError):
                s = None
            if s:
                out.append(s)
                break
    for m in _HEX.finditer(text):
        hexdigits = re.sub(r"0x|\\x|[\s:,\-]", "", m.group(0))
        if len(hexdigits) % 2 == 0:
            s = _bytes_text(bytes.fromhex(hexdigits))
            if s:
                out.append(s)
    return [s for s in out if s != text]


def decoded_forms(text: str, depth: int = 2) -> list[str]:
    """Texts that `text` decodes to (not `text` itself), up to `depth` levels of encoding."""
    seen: list[str] = []
    frontier = [_strip_invisible(text)]
    for _ in range(depth):
        nxt = []
        for t in frontier:
            for s in _decode_once(t):
                if s not in seen and s != text:
                    seen.append(s)
                    nxt.append(s)
        frontier = nxt
    return seen


# --- digit streams --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    """A maximal run of digits; `broken`: it follows a word, a mask or a new text (not just
    separators); `source`: which text (item) of a stream it came from."""

    digits: str
    broken: bool
    source: int = 0


def segments(canon: str, source: int = 0) -> list[Segment]:
    """The digit segments of a canonical text, in order."""
    out: list[Segment] = []
    last = 0
    for m in _SEGMENT.finditer(canon):
        gap = canon[last:m.start()]
        broken = not out or any(ch.isalnum() or ch in MASK_CHARS for ch in gap)
        out.append(Segment(m.group(0), broken, source))
        last = m.end()
    return out


@dataclass(frozen=True)
class DigitHit:
    """Digits of a value found in a stream: how many, and which sources they came from."""

    length: int
    sources: tuple[int, ...]
    reversed: bool


def _grams(value: str) -> set[str]:
    n = ALLOWED_DIGITS + 1
    return {value[i:i + n] for i in range(len(value) - n + 1)}


def _range_ok(segs: Sequence[Segment]) -> bool:
    if any(s.broken for s in segs[1:]):
        return all(len(s.digits) >= JOIN_MIN_ACROSS_BREAK for s in segs)
    return len(segs) >= 3 or all(len(s.digits) >= 2 for s in segs)


def _chains(stream: Sequence[Segment], i: int, v: str) -> Iterator[list[Segment]]:
    """Runs of whole segments from `stream[i]` whose digits join into a substring of `v`; a
    short segment after a break may be left out ("Part 2: 2290": a list number between parts)."""
    todo: list[tuple[int, list[Segment]]] = [(i + 1, [stream[i]])]
    while todo:
        j, used = todo.pop()
        yield used
        joined = "".join(s.digits for s in used)
        first = j
        while j < len(stream):
            nxt = stream[j]
            if joined + nxt.digits in v:
                # Reached by leaving short segments out, the join crosses a break whatever
                # separates `nxt` from the segment just before it ("11-02", "line 1", "AP-2.2").
                seg = nxt if j == first or nxt.broken else Segment(nxt.digits, True, nxt.source)
                todo.append((j + 1, [*used, seg]))
            if not (nxt.broken and len(nxt.digits) <= SKIPPABLE_DIGITS):
                break
            j += 1


def find_digits(stream: Sequence[Segment], value: str) -> DigitHit | None:
    """The longest disclosure of digit `value` in `stream` (None if there is none)."""
    best: DigitHit | None = None
    for rev, v in ((False, value), (True, value[::-1])):
        grams = _grams(v)
        if not grams:
            continue
        for i, seg in enumerate(stream):
            d = seg.digits
            if len(d) > ALLOWED_DIGITS and any(d[k:k + ALLOWED_DIGITS + 1] in grams
                                               for k in range(len(d) - ALLOWED_DIGITS)):
                n = _longest_common(d, v)
                if (best is None or n > best.length) and (not rev or n >= len(v)):
                    best = DigitHit(n, (seg.source,), rev)
            for used in _chains(stream, i, v):
                n = sum(len(s.digits) for s in used)
                if n > ALLOWED_DIGITS and len(used) > 1 and _range_ok(used) and (best is None or n > best.length) \
                        and (not rev or n >= len(v)):
                    best = DigitHit(n, tuple(sorted({s.source for s in used})), rev)
    return best


def _longest_common(a: str, b: str) -> int:
    """Length of the longest common substring of two short digit strings."""
    best = 0
    for i in range(len(a)):
        for j in range(len(b)):
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            best = max(best, k)
    return best


# --- one text: every form --------------------------------------------------------------------------

@dataclass(frozen=True)
class Forms:
    """A text prepared for matching: its canonical form, its digit segments, and the canonical
    forms of what it decodes to. Digits are matched on `segments` and `decoded_digits`, which
    are read with the caller's mask applied (references blanked); texts and amounts on `canon`
    and `decoded`, which are not masked (a date of birth is a date, a salary an amount)."""

    canon: str
    segments: list[Segment]
    decoded: list[str]
    decoded_digits: list[str]

    @classmethod
    def of(cls, text: str, source: int = 0, mask: Callable[[str], str] | None = None) -> Forms:
        """`mask` (what is not a value, blanked) applies to the digit reading of the text and of
        each text it decodes to, so a reference inside an encoded attachment is a reference too."""
        canon = canonical(text)
        decoded = decoded_forms(text)
        if mask is None:
            dcanon = [canonical(s) for s in decoded]
            return cls(canon, segments(canon, source), dcanon, dcanon)
        return cls(canon, segments(canonical(mask(text)), source), [canonical(s) for s in decoded],
                   [canonical(mask(s)) for s in decoded])

    def all_canon(self) -> list[str]:
        return [self.canon, *self.decoded]


def squash(canon: str) -> str:
    """Letters and digits only, single-spaced (how text values are compared)."""
    return " ".join(re.findall(r"[^\W_]+", canon))


def amounts(canon: str) -> set[str]:
    """Amounts with cents in a canonical text, as ``1234.56`` (any grouping)."""
    out = set()
    for m in _AMOUNT.finditer(canon):
        digits = re.sub(r"\D", "", m.group(0))
        out.add(f"{int(digits[:-2] or 0)}.{digits[-2:]}")
    return out


def digit_value(raw: object) -> str:
    """A stored digit value reduced to its ASCII digits."""
    return re.sub(r"\D", "", _strip_invisible(str(raw)))


def text_in(value_squashed: str, forms: Iterable[str]) -> bool:
    """True if a (squashed) text value occurs in any of the canonical texts."""
    return any(value_squashed and value_squashed in squash(c) for c in forms)
