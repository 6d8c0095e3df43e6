"""Per-claim matching: which unit of an answer supports which claim.

A claim is one thing the answer must say (a driver of the bridge, a tie-out, an entry): who
or what it concerns (`subject`: any alias), the record it comes from (`document`: any id of
that record), what happened (`kind`: vocabulary terms), a figure (`amount`, with its declared
precision and tolerance) and the direction of its effect (`effect`: "up"/"down" on the
measure, e.g. margin). A unit supports a claim when it states every part the claim declares,
the kind is not negated or deferred, the figure is the claim's (not merely present somewhere
in the file) and no sign or direction word contradicts the truth.

Two modes, declared by the check:

- exclusive (the default): a unit that names specific facts (subject, document or amount;
  for a claim with neither subject nor document, its kind) of MORE than one claim supports
  none of them: the answer that lists every party, document and amount in one sentence fails.
- shared (`exclusive=False`): a unit may state several claims ("Inventory ($X), AP ($Y) and
  GRNI ($Z) all tie"); each figure, kind word and direction word then belongs to the claim
  whose anchor (subject, else kind) stands nearest to it, so swapped figures fail.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from orchestrator.grading.text.numbers import Figure, figures, matches, states_exactly
from orchestrator.grading.text.segment import Unit, units, visible
from orchestrator.grading.text.vocabulary import (
    DOWN_COMPARATIVES,
    DOWN_WORDS,
    HEDGE_BEFORE,
    NEGATION_AFTER,
    NEGATION_BEFORE,
    RETRACTED_AFTER,
    SPECULATION_BEFORE,
    STATUS_TERMS,
    UP_COMPARATIVES,
    UP_WORDS,
    negative_patterns,
    phrase_pattern,
    term_patterns,
)
from orchestrator.grading.text.vocabulary_payables import CLEARED, HOLD_TERMS

FAVOUR = re.compile(r"(?:un)?favou?rable|adverse", re.IGNORECASE)
MEASURE = re.compile(r"\b(?:gross[ -])?(?:margins?|profit|gm)\b", re.IGNORECASE)
# Terms a section heading may not supply: a "Tie-outs" heading does not say an account ties.
NO_CONTEXT_TERMS = frozenset({"ties"})
# A counterfactual sets a cause aside to measure it ("without the price increase, margin would
# have been $X higher", "had it not been for the rebate ..."): it states the cause, it denies
# nothing; its direction words describe the world without the cause, so they count reversed.
_COUNTERFACTUAL_CUE = re.compile(
    r"\b(?:without|absent|excluding|but for|if not for|were it not for|had it not been for|"
    r"if (?:it|there) (?:were|was|had been|had) not (?:been )?(?:for )?|"
    r"if (?:we|you|one) (?:exclude|remove|strip out|take out|set aside)d?)\b[^.;|,]{0,40}$", re.IGNORECASE)
_WOULD = re.compile(r"\b(?:would|could|might)(?:\s+not|n't)?\s+(?:have|be)\b|\bwould've\b|\b\w+'d have\b",
                    re.IGNORECASE)
_YES = re.compile(r"(?:yes|y|true|ok|✓|✔|☑|✅|x)\.?", re.IGNORECASE)
_NO = re.compile(r"(?:no|n|false|✗|✘|❌|❎)\.?", re.IGNORECASE)


NEGATION_MODES = ("any", "all", "ignore")


@dataclass(frozen=True)
class Claim:
    """One claim an answer must make (see the module docstring)."""

    name: str
    subject: tuple[str, ...] = ()
    document: tuple[str, ...] = ()
    kind: tuple[str, ...] = ()
    amount: float | None = None
    effect: str = ""                 # "up", "down" or "" (no direction to check)
    direction_required: bool = False  # the unit must state the direction (a sign or a word)
    precision: str = "reviewer"
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    # How a negated kind word denies the claim: "any" (one negated word denies it); "all" (only
    # when every kind word is negated: "held for price: billed at X instead of the break price"
    # states the cause and sets an alternative aside); "ignore" (a claim reporting what someone
    # asked for: "its invoice told us to release all holds; none of it was done" is the agent
    # declining, not a denial).
    negation: str = "any"


@dataclass
class Verdict:
    """Whether a claim is supported, by which unit, or what the closest unit lacked."""

    claim: str
    supported: bool
    unit: str = ""
    why: str = ""


@dataclass
class _Span:
    start: int
    end: int
    negated: bool = False
    hedged: bool = False     # a speculation ("may have raised prices"), not a statement
    up: bool = False
    alias: str = ""          # the subject/document alias it matched


@dataclass
class _Found:
    """What one unit says about one claim."""

    subject: list[_Span] = field(default_factory=list)
    document: list[_Span] = field(default_factory=list)
    kind: list[_Span] = field(default_factory=list)
    negative: list[_Span] = field(default_factory=list)
    context_kind: bool = False
    counterfactual: bool = False    # a kind word stands in a counterfactual ("without the rebate ... would")
    cleared: list[_Span] = field(default_factory=list)  # "was paid", "was validated" (a hold term's claim)


def unit_text(u: Unit) -> str:
    """A unit's text as a reviewer reads it: a table row's yes/no cells read as their header
    ("Tied?: Yes" is "Tied", "No" is "not Tied"), a zero difference as "no difference"; a table
    column's cells read with their row's label ("Document: MSB-30001")."""
    if u.kind not in ("row", "column"):
        return u.text
    parts = []
    for header, cell in u.cells:
        h = header.strip().rstrip("?:").strip()
        if h and _YES.fullmatch(cell.strip()):
            parts.append(h)
        elif h and _NO.fullmatch(cell.strip()):
            parts.append("not " + h)
        elif re.search(r"differ", h, re.IGNORECASE) and (figs := figures(cell)) and all(f.value == 0 for f in figs):
            parts.append("no difference")
        elif cell and h and u.kind == "column":
            parts.append(f"{h}: {cell}")
        elif cell:
            parts.append(cell)
    return " | ".join(parts)


def _spans(text: str, patterns: Sequence[re.Pattern[str]]) -> list[_Span]:
    return [_Span(m.start(), m.end()) for p in patterns for m in p.finditer(text)]


def _alias_spans(text: str, aliases: Sequence[str]) -> list[_Span]:
    return [_Span(m.start(), m.end(), alias=a) for a in aliases if a.strip()
            for m in re.finditer(phrase_pattern(a), text, re.IGNORECASE)]


def _negated(text: str, s: _Span, status: bool) -> bool:
    before = re.split(r"[.;|(]", text[max(0, s.start - 60):s.start])[-1]
    # "goods received not invoiced", "shipped but not yet billed" name a thing, they deny nothing.
    before = re.sub(r"\bnot (?:yet )?(?:invoiced|billed)\b", "", before, flags=re.IGNORECASE)
    if NEGATION_BEFORE.search(before):
        return True
    return status and bool(HEDGE_BEFORE.search(before) or NEGATION_AFTER.search(text[s.end:s.end + 45]))


def _hedged(text: str, s: _Span) -> bool:
    """Guessed at ("may have raised prices"), or taken back after it ("... a write-off, but that
    is wrong")."""
    before = re.split(r"[.;|(]", text[max(0, s.start - 60):s.start])[-1]
    m = SPECULATION_BEFORE.search(before)
    # A guess about a stated fact's background ("raised prices, which may reflect a surcharge",
    # "possibly because of ...") leaves the fact stated.
    if m and (re.search(r"\b(?:which|that)\s+(?:\w+\s+)?$", before[:m.start()])
              or re.match(r"\w+\s+(?:because|due to)\b", before[m.start():])):
        m = None
    return bool(m or RETRACTED_AFTER.search(text[s.end:s.end + 80]))


def _counterfactual(text: str, s: _Span) -> bool:
    """The kind word is the cause a counterfactual sets aside (see `_COUNTERFACTUAL_CUE`)."""
    before = re.split(r"[.;|(]", text[max(0, s.start - 60):s.start])[-1]
    return bool(_COUNTERFACTUAL_CUE.search(before) and _WOULD.search(text))


def _find(c: Claim, text: str, context: str) -> _Found:
    f = _Found()
    f.subject = _alias_spans(text, c.subject)
    f.document = _alias_spans(text, c.document)
    for term in c.kind:
        for s in _spans(text, term_patterns(term)):
            if term not in STATUS_TERMS and _counterfactual(text, s):
                f.counterfactual = True
            else:
                s.negated = _negated(text, s, term in STATUS_TERMS)
                s.hedged = _hedged(text, s)
            f.kind.append(s)
        f.negative += _spans(text, negative_patterns(term))
        if term in HOLD_TERMS:
            f.cleared += _spans(text, (CLEARED,))
        if term not in NO_CONTEXT_TERMS and context and any(p.search(context) for p in term_patterns(term)):
            f.context_kind = True
    return f


def _drop_inner(found: dict[str, _Found]) -> None:
    """An alias inside a longer alias of another claim is that claim's ("Ball valve 1 in" in
    "Ball valve 1 in bronze" belongs to the bronze valve's claim)."""
    spans = [(n, s) for n, f in found.items() for s in f.subject + f.document]
    for name, f in found.items():
        def inside(s: _Span, name: str = name) -> bool:
            return any(o is not s and n != name and o.start <= s.start and s.end <= o.end
                       and (o.end - o.start) > (s.end - s.start) for n, o in spans)
        f.subject = [s for s in f.subject if not inside(s)]
        f.document = [s for s in f.document if not inside(s)]


def _direction_words(text: str, comparatives: bool) -> list[tuple[_Span, str]]:
    words = [(_Span(m.start(), m.end()), "up") for m in UP_WORDS.finditer(text)] + \
        [(_Span(m.start(), m.end()), "down") for m in DOWN_WORDS.finditer(text)]
    if comparatives:
        words += [(_Span(m.start(), m.end()), "up") for m in UP_COMPARATIVES.finditer(text)] + \
            [(_Span(m.start(), m.end()), "down") for m in DOWN_COMPARATIVES.finditer(text)]
    return words


def direction(text: str, spans: Sequence[_Span] | None = None, *, comparatives: bool = False) -> str:
    """The direction a unit gives its measure (margin): the up/down word nearest to a mention
    of the measure in the same clause; "" when none. `spans` limits the words considered;
    `comparatives` lets "higher"/"lower" count."""
    best: tuple[int, str] | None = None
    words = _direction_words(text, comparatives)
    if spans is not None:
        keep = {(s.start, s.end) for s in spans}
        words = [(w, d) for w, d in words if (w.start, w.end) in keep]
    for m in MEASURE.finditer(text):
        for w, d in words:
            lo, hi = (w.end, m.start()) if w.end <= m.start() else (m.end(), w.start)
            gap = text[lo:hi]
            if re.search(r"[;|]|\.(?!\d)", gap) or len(gap.split()) > 4:
                continue
            dist = hi - lo
            if best is None or dist < best[0]:
                best = (dist, d)
    if best:
        return best[1]
    # "favourable"/"adverse" say which way the measure moved without naming it.
    for w, d in words:
        if FAVOUR.fullmatch(text[w.start:w.end]):
            return d
    return ""


def _own_direction(c: Claim, text: str, kinds: Sequence[_Span]) -> str:
    """The direction stated by the claim's own kind words ("fell", "a decrease of")."""
    for s in kinds:
        word = text[s.start:s.end]
        if DOWN_WORDS.search(word) or DOWN_COMPARATIVES.search(word):
            return "down"
        if UP_WORDS.search(word) or UP_COMPARATIVES.search(word):
            return "up"
    return ""


def _denied(c: Claim, kinds: Sequence[_Span]) -> bool:
    negated = [s.negated for s in kinds]
    if c.negation == "ignore" or not negated:
        return False
    if c.negation == "all":
        return all(s.negated or s.hedged for s in kinds)
    # One word of what happened denied or only guessed at ("a project sale that could perhaps be
    # a mix effect") leaves the claim unstated.
    return any(s.negated or s.hedged for s in kinds)


def _judge(c: Claim, text: str, f: _Found, figs: Sequence[Figure], dir_words: Sequence[_Span] | None) -> str:
    """"" when the unit supports the claim, else what it lacks."""
    if c.subject and not f.subject:
        return "names no alias of its subject"
    if c.document and not f.document:
        return "names none of its documents"
    if c.kind:
        if _denied(c, f.kind) or f.negative:
            return "its kind is negated, deferred or contradicted"
        if _same_clause(text, f.cleared, f.document):
            return "says its invoice was paid, validated, approved or released: not on hold"
        if not f.kind and not f.context_kind:
            return "does not say what happened (kind)"
    # A claim about a change ("fell", "a decrease of") states its direction with its own kind
    # word; a driver's kind ("price increase") is no direction of the measure.
    stated = direction(text, dir_words, comparatives=c.direction_required) or (
        _own_direction(c, text, f.kind) if c.direction_required else "")
    if f.counterfactual and stated:
        stated = "up" if stated == "down" else "down"
    if c.effect and stated and stated != c.effect:
        return f"gives the wrong direction ({stated}, truth {c.effect})"
    if c.amount is not None:
        good = [g for g in figs if matches(g, c.amount, c.precision, c.abs_tol, c.rel_tol)]
        if c.effect:
            want = -1 if c.effect == "down" else 1
            good = [g for g in good if not g.signed or g.signed == want or (c.amount < 0 and g.signed == -want)]
        if not good:
            return f"does not state its amount {c.amount:,.2f} (precision {c.precision})"
        if c.direction_required and c.effect == "down" and not stated and not any(g.signed for g in good):
            # An unsigned figure with no direction word is a positive one (as a table writes it).
            return "states no direction (a minus, parentheses or a word): an unsigned change reads as a rise"
    elif c.direction_required and c.effect and not stated:
        return "states no direction (a sign or a word)"
    return ""


def _same_clause(text: str, a: Sequence[_Span], b: Sequence[_Span]) -> bool:
    """Some span of `a` and some span of `b` stand in one clause (no ";" or "|" between them)."""
    return any(not re.search(r"[;|]", text[min(x.end, y.end):max(x.start, y.start)]) for x in a for y in b)


def _names(c: Claim, f: _Found, figs: Sequence[Figure], shared: frozenset[str] = frozenset()) -> bool:
    """The unit names a specific fact of the claim (an alias in `shared` is not specific)."""
    if _spans_of(f.subject + f.document, shared):
        return True
    if c.amount is not None and any(states_exactly(g, c.amount) for g in figs):
        return True
    # A claim known only by its kind (an entry of the close) is named by its kind words; one with
    # an amount but no party (volume and other) only by its amount.
    return not (c.subject or c.document or c.amount is not None) and bool(f.kind)


def _spans_of(spans: Sequence[_Span], shared: frozenset[str]) -> list[_Span]:
    return [s for s in spans if not shared or s.alias.casefold() not in shared]


def _shared_aliases(claims: Sequence[Claim]) -> frozenset[str]:
    """Aliases (subject or document) that more than one claim declares: two claims about the
    same vendor ("Mid-State's price hold", "Mid-State's printed instruction") share its name,
    which then names neither; their documents or kinds tell them apart."""
    seen: dict[str, int] = {}
    for c in claims:
        for a in {x.casefold() for x in c.subject + c.document}:
            seen[a] = seen.get(a, 0) + 1
    return frozenset(a for a, n in seen.items() if n > 1)


def _names_by_kind(c: Claim, f: _Found, shared: frozenset[str]) -> bool:
    """A claim whose every alias is shared with another claim (the vendor's bank-change email
    beside the vendor's tax hold) is named by a shared alias together with its kind, when no
    unit-level specific fact names any claim."""
    aliases = {x.casefold() for x in c.subject + c.document}
    if not aliases or not aliases <= shared:
        return False
    return bool(f.subject or f.document) and (c.subject == () or bool(f.subject)) and bool(f.kind)


_CLAUSE_BREAK = re.compile(r"[,;|]|\band\b|\bwhile\b|\bwhereas\b|\bbut\b")


def _nearest(owner_spans: dict[str, list[_Span]], start: int, end: int, breaks: Sequence[int]) -> str | None:
    """The claim whose anchor stands nearest: first in the same clause ("payroll of $A,
    depreciation of $B"), then by characters; on a tie the anchor after the figure ("$X in
    August")."""
    best: tuple[int, int, int, str] | None = None
    for name, spans in owner_spans.items():
        for s in spans:
            after = 0 if s.start >= end else 1
            lo, hi = (end, s.start) if s.start >= end else (s.end, start)
            dist = max(hi - lo, 0)
            crossed = sum(1 for b in breaks if lo <= b < hi)
            key = (crossed, dist, after, name)
            if best is None or key < best:
                best = key
    return best[3] if best else None


def _shared(claims: Sequence[Claim], text: str, found: dict[str, _Found], figs: list[Figure]) -> dict[str, str]:
    """Judge a unit where several claims may stand: facts go to the nearest anchor."""
    anchors: dict[str, list[_Span]] = {}
    for c in claims:
        f = found[c.name]
        a = f.subject if c.subject else (f.kind or f.document)
        if a:
            anchors[c.name] = a
    if not anchors:
        # Nothing in the unit names a claim: the section's heading says what its lines are about.
        anchors = {c.name: [_Span(0, 0)] for c in claims if found[c.name].context_kind}
    breaks = [m.start() for m in _CLAUSE_BREAK.finditer(text)]
    # An aside in parentheses with its own figure ("September margin: $X (August: $Y)") is a
    # clause of its own; a bare label in parentheses names the figure beside it ("$Y (August)").
    breaks += [m.start() for m in re.finditer(r"\(([^()]*)\)?", text) if re.search(r"\d", m.group(1))]
    out: dict[str, str] = {}
    if not anchors:
        return out
    kind_count: dict[str, int] = {}
    for c in claims:
        for t in c.kind:
            kind_count[t] = kind_count.get(t, 0) + 1
    dir_spans = [w for w, _ in _direction_words(text, True)]
    for c in claims:
        if c.name not in anchors:
            continue
        f = found[c.name]
        mine = [g for g in figs if _nearest(anchors, g.start, g.end, breaks) == c.name]
        shared_kind = any(kind_count.get(t, 0) > 1 for t in c.kind) and bool(c.subject)
        kinds = [s for s in f.kind if (shared_kind and not s.negated) or _nearest(anchors, s.start, s.end, breaks) == c.name]
        negs = [s for s in f.negative if _nearest(anchors, s.start, s.end, breaks) == c.name]
        view = _Found(f.subject, f.document, kinds, negs, f.context_kind, f.counterfactual, f.cleared)
        words = [s for s in dir_spans if _nearest(anchors, s.start, s.end, breaks) == c.name]
        out[c.name] = _judge(c, text, view, mine, words)
    return out


@cache
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(phrase_pattern(name), re.IGNORECASE)


@dataclass
class _Others:
    """For one claim: other parties' names that hold one of its aliases, and its aliases that,
    not being a party's whole name, are part of another's ("Keystone" beside "Keystone State
    Metals", when the claim's party is Keystone Fastener)."""

    names: list[re.Pattern[str]] = field(default_factory=list)
    ambiguous: frozenset[str] = frozenset()


def _others(c: Claim, parties: Sequence[str]) -> _Others:
    own = {a.casefold() for a in c.subject + c.document}
    whole = {p.casefold() for p in parties}
    aliases = [a for a in c.subject + c.document if a.strip()]
    holders = [p for p in parties if p.casefold() not in own and any(_name_pattern(a).search(p) for a in aliases)]
    ambiguous = frozenset(a.casefold() for a in c.subject if a.casefold() not in whole
                          and any(_name_pattern(a).search(p) for p in holders))
    return _Others([_name_pattern(p) for p in holders], ambiguous)


def _drop_others(f: _Found, text: str, o: _Others) -> None:
    """A mention inside another party's name is that party's; a subject named only by an
    ambiguous alias is not named, unless the unit also names the claim's document."""
    if o.names:
        spans = [(m.start(), m.end()) for p in o.names for m in p.finditer(text)]

        def inside(s: _Span) -> bool:
            return any(a <= s.start and s.end <= b and b - a > s.end - s.start for a, b in spans)
        f.subject = [s for s in f.subject if not inside(s)]
        f.document = [s for s in f.document if not inside(s)]
    if o.ambiguous and not f.document and all(s.alias.casefold() in o.ambiguous for s in f.subject):
        f.subject = []


# A unit its writer withdrew or left open: "(Ignore this line ...)", "TODO: ...", "Draft only: ...",
# a question; or a section headed as scratch work ("## Ignore this section", "## Scratchpad").
_IGNORE_THIS = r"(?:ignore|disregard)(?:\s*:|\s+(?:this|these|the following|below|above|everything|all of this|" \
               r"(?:the\s+)?(?:line|section|paragraph|part)s?)\b)"
_WITHDRAWN_LEAD = re.compile(
    rf"^\W*(?:(?:please\s+)?{_IGNORE_THIS}|draft(?: only)?\s*[:)\u2013\u2014-]|draft only\b|scratch(?:pad)?\s*:|"
    r"todo\b|tbd\b|tbc\b|not part of)", re.IGNORECASE)
_WITHDRAWN_SECTION = re.compile(rf"^\W*(?:ignore|disregard)\W*$|\b{_IGNORE_THIS}|\b(?:scratch\w*|superseded|discarded|"
                                r"not part of)\b", re.IGNORECASE)


def _withdrawn(u: Unit) -> bool:
    return bool(_WITHDRAWN_LEAD.search(u.text) or _WITHDRAWN_SECTION.search(u.context)
                or re.search(r"\?[\W_]*$", u.text))


def _short_names(c: Claim) -> tuple[str, ...]:
    """The short form a writer uses for a party once its record is named ("Allied" for Allied
    Industrial Fittings beside invoice PA-53258): the first word of a multi-word subject alias.
    Only a claim with documents gets them, and they name it only beside one of its documents."""
    if not c.document:
        return ()
    own = {a.casefold() for a in c.subject}
    out = []
    for a in c.subject:
        words = a.split()
        first = words[0].rstrip(".,'") if len(words) > 1 else ""
        if len(first) >= 4 and first[:1].isupper() and first.casefold() not in own:
            out.append(first)
    return tuple(dict.fromkeys(out))


def grade(markdown: str, claims: Sequence[Claim], *, exclusive: bool = True,
          parties: Sequence[str] = ()) -> dict[str, Verdict]:
    """For every claim, whether some unit of `markdown` supports it (see the module docstring).
    `parties` are the names of the scenario's parties (vendors, customers, items): an alias that
    is part of another party's name is ambiguous and names its claim only beside its document."""
    verdicts = {c.name: Verdict(c.name, False, why="no unit mentions it") for c in claims}
    shorts = {c.name: _short_names(c) for c in claims}
    claims = [replace(c, subject=c.subject + shorts[c.name]) for c in claims]
    shared = _shared_aliases(claims)
    others = {c.name: _others(c, parties) for c in claims}
    for c in claims:
        o = others[c.name]
        o.ambiguous = o.ambiguous | {a.casefold() for a in shorts[c.name]}
    for u in units(visible(markdown)):
        if _withdrawn(u):
            continue
        text = unit_text(u)
        figs = figures(text)
        found = {c.name: _find(c, text, u.context) for c in claims}
        for c in claims:
            _drop_others(found[c.name], text, others[c.name])
        _drop_inner(found)
        named = [c for c in claims if _names(c, found[c.name], figs, shared)]
        if not named:
            named = [c for c in claims if _names_by_kind(c, found[c.name], shared)]
        if exclusive:
            if len(named) > 1:
                for c in named:
                    if not verdicts[c.name].supported:
                        verdicts[c.name].why = f"a unit names facts of several claims ({', '.join(n.name for n in named)})"
                continue
            results = {c.name: _judge(c, text, found[c.name], figs, None) for c in named}
        else:
            results = _shared(claims, text, found, figs)
        for name, why in results.items():
            v = verdicts[name]
            if v.supported:
                continue
            if not why:
                verdicts[name] = Verdict(name, True, unit=u.text[:200])
            else:
                v.why = f"{why}: {u.text[:120]!r}"
    return verdicts
