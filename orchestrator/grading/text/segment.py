"""Cutting a markdown answer into the units a reviewer reads one at a time.

A unit is a sentence of a paragraph, a list item (with its continuation lines), a table row
(its cells known by their column's header), a table column (its header and its cells, each known
by its row's label), or a heading. Sentence boundaries come from pysbd
(rule-based; decimals, initials, most abbreviations); before it runs, the full stops of the
abbreviations a business answer uses ("invoice no. PA-1", "approx. $1.2K", "Sept. 30", a
vendor named "… Co.") are masked so that no sentence ends inside them. Each unit keeps the
text of the heading it stands under (`context`), where a section's title may say what kind of
thing its lines are about.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

import pysbd

# A stand-in for a masked full stop: one character, so offsets do not move.
_MASK = "\u2024"
# Abbreviations that never end a sentence in these answers (titles and Latin ones: what follows
# them is part of it).
_ALWAYS = r"(?:e\.g|i\.e|cf|vs|viz|mr|ms|mrs|dr|st)"
# Abbreviations that may also end one ("held for qty. Keystone's ..."): like a company suffix,
# they end a sentence only when a capitalised word that is not an id follows ("invoice no.
# PA-1", "approx. $1.2K" and "Sept. 30" do not).
_MAYBE_END = r"(?:no|nos|nr|num|inv|ref|approx|appr|ca|est|incl|excl|qty|amt|acct|dept|" \
             r"fig|p|pp|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|re|avg|wk|yr|mo|mos|ytd|mtd)"
# Company suffixes: they end a sentence only when a capitalised word that is not an id follows.
_COMPANY = r"(?:co|inc|ltd|corp|bros|llc|plc|gmbh|s\.a|n\.v|b\.v|pty|intl)"
_ABBR_ALWAYS = re.compile(rf"(?<![\w.])({_ALWAYS})\.(?=\s*\S)", re.IGNORECASE)
_ABBR_COMPANY = re.compile(rf"(?<![\w.])({_COMPANY}|{_MAYBE_END})\.(?=(\s+)(\S+))", re.IGNORECASE)
_ID_LIKE = re.compile(r"[A-Z]{1,6}-?\d|\d")

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_LINE = re.compile(r"^\s*(?:\*\*|__)(.+?)(?:\*\*|__)\s*:?\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)]|\(?[a-z]\))\s+(.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LABEL_LINE = re.compile(r"^\s*(?:\*\*)?[A-Z][\w/&() .'-]{0,40}?(?:\*\*)?\s*:\s+\S")


@dataclass(frozen=True)
class Unit:
    """One unit of the answer: what it says, what kind of block it came from, and its context."""

    text: str
    kind: str                                  # "sentence", "item", "row", "column", "heading"
    context: str = ""                          # the heading it stands under
    # a row's (column header, cell); a column's ("", its header) then (row label, cell)
    cells: tuple[tuple[str, str], ...] = field(default_factory=tuple)


@cache
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False)


def _mask(text: str) -> str:
    text = _ABBR_ALWAYS.sub(lambda m: m.group(1) + _MASK, text)

    def company(m: re.Match[str]) -> str:
        nxt = m.group(3)
        ends = nxt[:1].isupper() and not _ID_LIKE.match(nxt) and not nxt.startswith(("(", "$"))
        return m.group(0) if ends else m.group(1) + _MASK
    return _ABBR_COMPANY.sub(company, text)


_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_STRUCK = re.compile(r"~~.+?~~|<(del|s|strike)\b[^>]*>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ ]{0,3}(```+|~~~+).*?(?:^[ ]{0,3}\1[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)


def visible(markdown: str) -> str:
    """The answer a reader sees as its statements: HTML comments (not rendered), struck-through
    text (withdrawn by its writer) and fenced code blocks (raw data, not a sentence that states
    what happened; FIN-2.1, CLO-4.1 ask for statements) are blanked, line breaks kept."""
    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))
    return _STRUCK.sub(blank, _FENCE.sub(blank, _COMMENT.sub(blank, markdown)))


def sentences(text: str) -> list[str]:
    """The sentences of a paragraph (abbreviations and decimals do not end one)."""
    masked = _mask(" ".join(text.split()))
    if not masked:
        return []
    return [s.strip().replace(_MASK, ".") for s in _segmenter().segment(masked) if s.strip()]


def _strip_md(text: str) -> str:
    """Emphasis and code marks removed (they say nothing a reviewer reads)."""
    return re.sub(r"(\*\*|__|`)", "", text).strip()


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [_strip_md(c) for c in re.split(r"(?<!\\)\|", body)]


def _is_table_line(line: str) -> bool:
    return line.count("|") >= 2 or (line.strip().startswith("|") and line.count("|") >= 1)


def _is_label(cell: str) -> bool:
    """A cell that names what its row is about ("Gross margin", "Document"), not a figure."""
    return bool(re.search(r"[A-Za-z]{3,}", re.sub(r"\b(?:USD|[kKmM]n?|bn|thousand|million)\b", "", cell)))


def _columns(header: list[str], rows: list[list[str]], context: str) -> list[Unit]:
    """A table's columns as units, each cell known by its row's label: a bridge laid out across
    (one column per driver, its header naming the driver) states each driver in its column.
    When the first column holds row labels ("Document", "Effect on margin"), it is not a unit
    of its own and labels the other columns' cells."""
    width = max([len(header)] + [len(r) for r in rows]) if rows else 0
    if width < 2:
        return []
    labelled = all(r and _is_label(r[0]) for r in rows)
    out = []
    for j in range(1 if labelled else 0, width):
        title = header[j] if j < len(header) else ""
        pairs = tuple((r[0] if labelled else "", r[j] if j < len(r) else "") for r in rows)
        text = " | ".join([title] * bool(title) + [f"{a}: {b}" if a else b for a, b in pairs if b])
        out.append(Unit(text, "column", context, (("", title), *pairs)))
    return out


def units(markdown: str) -> list[Unit]:
    """Every unit of a markdown text, in reading order."""
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[Unit] = []
    context = ""
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            for s in sentences(_strip_md(" ".join(para))):
                out.append(Unit(s, "sentence", context))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        h = _HEADING.match(line) or _BOLD_LINE.match(line)
        if h:
            flush()
            context = _strip_md(h.group(h.lastindex or 1))
            out.append(Unit(context, "heading", context))
            i += 1
            continue
        if _is_table_line(line) and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]):
            flush()
            header = _cells(line)
            i += 2
            rows: list[list[str]] = []
            while i < len(lines) and lines[i].strip() and _is_table_line(lines[i]):
                row = _cells(lines[i])
                rows.append(row)
                pairs = tuple((header[k] if k < len(header) else "", c) for k, c in enumerate(row))
                out.append(Unit(" | ".join(c for c in row if c), "row", context, pairs))
                i += 1
            out += _columns(header, rows, context)
            continue
        item = _ITEM.match(line)
        if item:
            flush()
            indent, body = len(item.group(1)), [item.group(2)]
            i += 1
            while i < len(lines) and lines[i].strip() and not _ITEM.match(lines[i]) \
                    and not _HEADING.match(lines[i]) and (len(lines[i]) - len(lines[i].lstrip()) > indent
                                                          or not (_is_table_line(lines[i])
                                                                  or _LABEL_LINE.match(lines[i]))):
                body.append(lines[i].strip())
                i += 1
            out.append(Unit(_strip_md(" ".join(body)), "item", context))
            continue
        if para and _LABEL_LINE.match(line):
            flush()  # "Inventory: $X, ties" on its own line is a unit of its own
        para.append(line.strip())
        i += 1
    flush()
    return out
