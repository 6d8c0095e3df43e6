"""Kind vocabulary: the words a reviewer accepts for what a claim says happened.

A claim's `kind` names terms of `TERMS` (or gives its own literal phrases). Every term is a
list of regular expressions, written from the handbooks' own wording (FIN-2.x, CLO-x.x) plus
the common forms an analyst uses (verb forms, abbreviations, synonyms). `NEGATIVE_TERMS` are
phrases that state the opposite of a term (a control account that is out of balance) and so
deny it wherever they appear for the claim. Patterns are matched case-insensitively.
"""
from __future__ import annotations

import re
from functools import cache

from orchestrator.grading.text.vocabulary_payables import PAYABLES_NEGATIVE, PAYABLES_STATUS_TERMS, PAYABLES_TERMS

_TIE_WORDS = (r"\bti(?:e|es|ed|ing)(?:[- ]?outs?)?\b", r"\bagree(?:s|d|ing)?\b", r"\bin agreement\b",
              r"\breconcile(?:s|d)?\b", r"\breconciling\b", r"\breconciliation\b", r"\bmatch(?:es|ed|ing)?\b",
              r"\bbalances? (?:to|with)\b", r"\bin balance\b", r"\bno difference\b", r"\bzero difference\b",
              r"\bdifferences?(?: of| is|:)?\s*(?:nil|none|zero|\$?0(?:\.00)?(?![.,]?\d))",
              r"\bno variance\b", r"\bbalanced\b", r"\bequals?\b", r"\bequal to\b", r"\bsame as\b",
              r"\bconsistent with\b", r"\bsquares?\b", r"\bin line with\b", r"✓|✔|☑|✅",
              # "GL $X = subledger $X"
              r"=\s*(?:the\s+)?(?:sub-?ledger|SL|subsidiary ledger)\b", r"\b(?:sub-?ledger|SL)\s*(?:\$[\d,.]+\s*)?=")

TERMS: dict[str, tuple[str, ...]] = {
    # FIN-2.2: a vendor price change, billed as invoice price variance (5110).
    "price_increase": (r"\bprices?\b[- ](?:increase|rise|hike|uplift|change)s?\b", r"\bprice[- ]?(?:increase|rise)d?\b",
                       r"\b(?:rais|increas|hik|lift)(?:e|es|ed|ing)\b (?:\w+ ){0,2}prices?\b",
                       r"\bprices? (?:\w+ ){0,2}(?:rose|risen|went up|increased|were raised|was raised|higher)\b",
                       r"\bhigher (?:unit |purchase |vendor )?prices?\b", r"\bnew (?:unit )?prices?\b",
                       r"\binvoice price variance\b", r"\bIPV\b", r"\bpurchase price variance\b", r"\bPPV\b",
                       r"\bsupplemental invoice\b", r"\bsurcharge\b", r"\b5110\b",
                       # A driver labelled "Price" in a bridge table or a list: the kind words of a
                       # driver only decide which driver a unit may support, so they can be broad.
                       r"\bpric(?:e|es|ed|ing)\b", r"\b(?:cost|rate) (?:increase|rise)s?\b",
                       r"\braised (?:its |their )?(?:unit )?(?:costs|rates)\b"),
    # FIN-2.3: a retroactive customer rebate tier, accrued against sales discounts (4100).
    "rebate": (r"\brebates?\b", r"\bvolume (?:discount|incentive)s?\b", r"\bsales discounts?\b", r"\b4100\b",
               r"\bretro(?:active|spective)? (?:discount|credit)s?\b", r"\bcustomer (?:discount|credit|incentive)s?\b"),
    # FIN-2.4: a sale earning a margin rate well below the previous month's shifts the mix.
    "mix": (r"\bmix\b", r"\blow(?:er)?[- ]margin\b", r"\bthin[- ]margin\b", r"\bmargin[- ]dilut\w*", r"\bdilut\w+\b",
            r"\bproject (?:order|sale|pricing|price)s?\b", r"\bbelow[- ](?:average|normal|usual) margins?\b",
            r"\bmargin rate\b"),
    # FIN-2.5: inventory write-offs (damage, obsolescence, expiry) through inventory adjustments (5300).
    "write_off": (r"\bwr(?:ite|ites|iting|itten|ote)[- ]?(?:off|offs|down|downs)\b", r"\bwriteoffs?\b",
                  r"\binventory adjustments?\b", r"\bstock adjustments?\b", r"\bscrap(?:s|ped|ping)?\b",
                  r"\bdamaged?\b", r"\bshrink(?:age)?\b", r"\bobsolescence\b", r"\bobsolete\b", r"\bexpir(?:y|ed)\b",
                  r"\b5300\b", r"\bdestroy\w*", r"\bspoil\w*", r"\bloss(?:es)? on (?:stock|inventory)\b"),
    # FIN-2.1: what no driver explains, shown as one line.
    "volume_other": (r"\bvolume\s*(?:and|&|/|\+|,)?\s*others?\b", r"\bvolume\b(?! (?:rebate|discount|incentive|tier))",
                     r"\bunexplained\b", r"\bresidual\b", r"\bremainder\b", r"\bremaining\b",
                     r"\bother (?:factors|items|movements|effects|changes|drivers)\b", r"\ball other\b",
                     r"\bnot explained\b", r"\bunallocated\b", r"\bbalancing (?:item|figure)\b"),
    # CLO-3.1 / CLO-4.1: whether a control account ties to its subledger.
    "ties": _TIE_WORDS,
    # A control account that does not tie (when the truth says so).
    "does_not_tie": (r"\bdo(?:es)?(?:n't| not) (?:\w+ ){0,2}(?:tie|agree|match|reconcile|balance)\b",
                     r"\bout of balance\b", r"\bunreconciled\b", r"\bdiscrepanc(?:y|ies)\b", r"\b(?:un|not )tied\b",
                     r"\bdifference (?:of )?\$?[1-9]"),
    # CLO-2.5: the revenue cutoff.
    "cutoff": (r"\bcut[- ]?off\b", r"\bunbilled (?:revenue|receivables?)\b", r"\baccrued revenue\b",
               r"\brevenue accru\w+\b", r"\b1120\b", r"\bshipped (?:\w+ ){0,6}(?:billed|invoiced)\b"),
    # CLO-2.1 .. CLO-2.5: the entries of the close.
    "payroll": (r"\bpayroll\b", r"\bwages?\b", r"\bsalar(?:y|ies)\b"),
    "depreciation": (r"\bdepreciat\w*\b", r"\b6450\b"),
    "prepaid": (r"\bprepaids?\b", r"\binsurance\b", r"\bamortis\w+\b", r"\bamortiz\w+\b", r"\b6400\b", r"\b1310\b"),
    "services_accrual": (r"\bcalibration\b", r"\bservices? (?:received|accrual)\b", r"\bbuckeye\b",
                         r"\b6250\b"),
    "revenue": (r"\brevenue\b", r"\bsales\b", r"\bcut[- ]?off\b", r"\bunbilled\b", r"\b1120\b"),
    # Months and the change of a measure.
    "prior_month": (r"\baug(?:ust|\.)?\b", r"\b2026-08\b", r"\b0?8/2026\b", r"\b(?:prior|previous|last) month\b"),
    "month": (r"\bsep(?:t|tember)?\.?\b", r"\b2026-09\b", r"\b0?9/2026\b", r"\b(?:this|current) month\b"),
    "change": (r"\bchange[ds]?\b", r"[Δ∆]", r"\bmoved?\b", r"\bdifference\b", r"\bvariance\b", r"\bdelta\b",
               r"\b(?:fell|rose|dropped|declined|decreased|increased|grew|shrank)\b",
               r"\b(?:decrease|increase|decline|drop|fall|rise|swing|reduction|improvement)\b",
               r"\b(?:lower|higher) than\b",
               # The change written as a direction alone ("..., down $X", "$X lower", "falling by
               # $X"): the words of direction name the change as well as its sign.
               r"\b(?:down|up|lower|higher|less|falling|rising|dropping|declining|decreasing|increasing|"
               r"shrinking|growing|worse|better|gain(?:s|ed)?)\b", r"\bdeteriorat\w*", r"\berosion\b", r"\bshortfall\b",
               r"\bnet (?:effect|impact|movement)\b", r"\bbridge total\b"),
}

NEGATIVE_TERMS: dict[str, tuple[str, ...]] = {
    "ties": (r"\bout of balance\b", r"\bunreconciled\b", r"\bdiscrepanc(?:y|ies)\b", r"\bmismatch\w*\b",
             r"\bdoes(?:n't| not) (?:\w+ ){0,2}(?:tie|agree|match|reconcile|balance)\b", r"\bbreak\b",
             r"\boff by\b", r"\b(?:un|not )tied\b", r"✗|✘|❌|❎|≠",
             # "ties except for a $1,250.00 difference": a tie with a difference is none.
             r"\bexcept\b", r"\b(?:save|but) for\b", r"\b(?:difference|variance|gap) (?:of )?\$?[1-9]",
             r"\$?[1-9][\d,]*(?:\.\d+)?[kK]? (?:difference|variance|gap)\b"),
}

TERMS.update(PAYABLES_TERMS)
NEGATIVE_TERMS.update(PAYABLES_NEGATIVE)

# Words before a term (same clause, a few words back) that deny it.
NEGATION_BEFORE = re.compile(
    r"\b(?:not|no|never|none|neither|nor|without|isn't|wasn't|aren't|weren't|doesn't|didn't|don't|won't|cannot|"
    r"can't|fails? to|failed to|rather than|instead of|other than|excluding|except|unlike|nothing to do with|"
    r"unrelated to|apart from)\b[^.;,]{0,40}$", re.IGNORECASE)
# For a status (an account ties): words before it that defer or hedge it ("will tie once ...").
HEDGE_BEFORE = re.compile(
    r"\b(?:yet to|still to|to be|will|would|should|could|may|might|expected to|once|until|if|whether|pending|"
    r"not yet|assume[sd]?|presumably|probably)\b[^.;,]{0,40}$", re.IGNORECASE)
# For a status: words right after it that defer it ("tie-out still to be done").
NEGATION_AFTER = re.compile(
    r"^[^.;,]{0,25}?\b(?:still to|to be (?:done|completed|performed|prepared|finished|reviewed|checked)|not yet|"
    r"pending|tbd|to do|outstanding|in progress|not (?:done|performed|completed|started)|was not|is not|"
    r"has not|have not|did not)\b", re.IGNORECASE)
# For any term: words before it that make it a guess, not a statement ("may have raised prices",
# "possibly damage", "unclear whether the rebate ...").
SPECULATION_BEFORE = re.compile(
    r"\b(?:may|might|possibly|perhaps|probably|presumably|likely|unlikely|unclear|uncertain|whether|not sure|"
    r"suspect(?:s|ed)?|speculat\w*|guess(?:ed)?|hypothes\w+)\b[^.;,]{0,40}$", re.IGNORECASE)
# For any term: words after it that take it back ("listed as a write-off, but that is wrong").
RETRACTED_AFTER = re.compile(
    r"^[^.;]{0,60}?\b(?:(?:that|this|which|it)(?: is|'s| was) (?:wrong|incorrect|false|mistaken|"
    r"not (?:the case|true|correct|right|so))|not the case)\b", re.IGNORECASE)
# Terms that state a status, which hedges and trailing deferrals deny too.
STATUS_TERMS = frozenset({"ties"}) | PAYABLES_STATUS_TERMS

# Direction of a measure (margin, a balance): nearest to the measure's word wins.
UP_WORDS = re.compile(r"\b(?:rose|risen|rises?|rising|increase[ds]?|increasing|up|improved?|improves|improving|"
                      r"grew|grown|grows?|gains?|gained|boost(?:ed|s)?|added|adds?|favou?rable|widen(?:ed|s)?|"
                      r"expand(?:ed|s)?|raised)\b", re.IGNORECASE)
DOWN_WORDS = re.compile(r"\b(?:fell|fallen|falls?|falling|decrease[ds]?|decreasing|down|lowered|lowering|"
                        r"reduc(?:e|ed|es|ing|tion)|declin(?:e|ed|es|ing)|drop(?:ped|s)?|unfavou?rable|adverse|"
                        r"hurt|hit|eroded?|erosion|cut|costs?|costing|dragged|drag|compress(?:ed|ion)?|squeez(?:e|ed)|"
                        r"shr[ai]nk|shrunk|negative|deduct(?:ed|s)?|narrow(?:ed|s)?|dilut(?:ed|es|ion))\b",
                        re.IGNORECASE)
# Comparatives say which way a change went ("$X lower than August") but, in a driver's
# sentence, usually compare rates ("against August's higher 57% margin"): only a claim that
# must state its direction reads them.
UP_COMPARATIVES = re.compile(r"\b(?:higher|better|more|greater|above)\b", re.IGNORECASE)
DOWN_COMPARATIVES = re.compile(r"\b(?:lower|worse|less|smaller|below)\b", re.IGNORECASE)


@cache
def term_patterns(term: str) -> tuple[re.Pattern[str], ...]:
    """The compiled patterns of a kind term: a `TERMS` name, or a literal phrase of the claim's own."""
    if term in TERMS:
        return tuple(re.compile(p, re.IGNORECASE) for p in TERMS[term])
    return (re.compile(phrase_pattern(term), re.IGNORECASE),)


@cache
def negative_patterns(term: str) -> tuple[re.Pattern[str], ...]:
    """Phrases that state the opposite of `term` (empty for most terms)."""
    return tuple(re.compile(p, re.IGNORECASE) for p in NEGATIVE_TERMS.get(term, ()))


_ANY_DASH = r"(?:[-\u2010\u2011\u2013]|\s)?"


def phrase_pattern(phrase: str) -> str:
    """A regex for a literal name or id: whole words, any run of spaces or a line break between
    words, and the dots of an abbreviation optional at its end ("Co." and "Co")."""
    words = phrase.split()
    # A hyphen inside an id or a name may be written as another dash, a space or not at all
    # ("PA-53258", "PA53258", "PA 53258"; "Mid-State", "Mid State"): the same record.
    parts = [re.sub(r"(?<=\w)\\-(?=\w)", lambda _: _ANY_DASH, re.escape(w.rstrip(".")))
             + (r"\.?" if w.endswith(".") else "") for w in words]
    body = r"[\s\u00a0]+".join(parts)
    lead = r"(?<![\w-])" if phrase[:1].isalnum() else ""
    tail = r"(?!\w)(?!-\d)" if phrase[-1:].isalnum() or phrase.endswith(".") else ""
    return lead + body + tail
