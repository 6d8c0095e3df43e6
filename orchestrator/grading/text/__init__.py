"""The text-check engine: how an answer written by a person is read and graded, deterministically.

API (stable; packs' text checks and their table tests use only this):

- `units(markdown) -> list[Unit]` (segment): sentences (pysbd, with the abbreviations of
  business writing masked), list items, table rows (cells known by their header), table columns
  (header, then each cell with its row's label: a bridge laid out across), headings; each with
  the heading it stands under (`Unit.context`).
- `figures(text) -> list[Figure]` (numbers): figures as written ($, thousands separators,
  K/M/million, parentheses and minus for negatives, %, amounts in words via text2num), with
  their resolution and rounding; `matches(figure, expected, precision, abs_tol, rel_tol)`;
  precisions `cent`, `dollar`, `reviewer` (default: two significant figures or whole dollars,
  the truth within the figure's own rounding: "$5.5K" for $5,475.54).
- `TERMS`, `term_patterns(term)` (vocabulary): kind words from the handbooks' wording plus
  common forms; a claim's `kind` lists term names or literal phrases.
- `Claim`, `Verdict`, `grade(markdown, claims, exclusive=True, parties=()) -> {claim name: Verdict}`
  (claims): per-claim matching with negation (a counterfactual is none), direction, figures
  bound to their claim and the list-everything rule; an alias that is part of another party's
  name (`parties`) names its claim only beside its document. `claim_from_spec(dict)` builds a Claim from a check's declaration.
  An alias two claims share (one vendor's price hold and its printed instruction) names
  neither; a claim whose aliases are all shared is named by an alias together with its kind.
  `Claim.negation` ("any", "all", "ignore") says how a negated kind word denies the claim; a
  kind word guessed at ("may have raised prices") or taken back ("..., but that is wrong") counts
  as negated. What a reader does not take as the answer's statements supports nothing: struck
  text, HTML comments and fenced code blocks (`segment.visible`), a question, a unit that opens
  as withdrawn ("Ignore this", "TODO:", "Draft only") or stands under a scratch heading. A
  party's short name (the first word of a multi-word subject alias) names its claim beside one
  of the claim's documents. Ids match with any dash or none ("PA53258", "pa-53258").
  Payables terms (hold reasons, reported requests, reversal): `vocabulary_payables`.

`mentions.uses(markdown, pattern)`: the units where a planted code stands as used, not quoted
in a refusal or a report of the request (the `not_fooled` check).

The check type that uses it is `text_claims` (tasks/checks/text.py: `TextClaimsCheck`; grader
function in orchestrator/grading/checks.py); its `erp_ids_from: table.column` lets a claim's
documents also go by the ERP id of the rows numbered as one of them (final database), and
`documents_where` keeps only the documents of rows with given values (the invoice on hold).
"""
from __future__ import annotations

from typing import Any

from orchestrator.grading.text.claims import NEGATION_MODES, Claim, Verdict, direction, grade, unit_text
from orchestrator.grading.text.numbers import PRECISIONS, Figure, figures, matches
from orchestrator.grading.text.segment import Unit, sentences, units
from orchestrator.grading.text.vocabulary import TERMS, term_patterns


def _aliases(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,) if v.strip() else ()
    return tuple(str(x) for x in v if str(x).strip())


def _amount(v: Any) -> float | None:
    if v is None or v == "":
        return None
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip().replace(",", "").replace("$", "")
    neg = s.startswith("(") and s.endswith(")")
    x = float(s.strip("()"))
    return -x if neg else x


def _negation(spec: dict[str, Any]) -> str:
    mode = str(spec.get("negation") or "any")
    if mode not in NEGATION_MODES:
        raise ValueError(f"claim {spec.get('name')!r}: negation {mode!r} (known: {', '.join(NEGATION_MODES)})")
    return mode


def claim_from_spec(spec: dict[str, Any]) -> Claim:
    """A Claim from a check's (truth-resolved) claim declaration."""
    effect = str(spec.get("effect") or "")
    if effect not in ("", "up", "down"):
        raise ValueError(f"claim {spec.get('name')!r}: effect {effect!r} is not up, down or empty")
    precision = str(spec.get("precision") or "reviewer")
    if precision not in PRECISIONS:
        raise ValueError(f"claim {spec.get('name')!r}: precision {precision!r} (known: {', '.join(PRECISIONS)})")
    return Claim(name=str(spec["name"]), subject=_aliases(spec.get("subject")),
                 document=_aliases(spec.get("document")), kind=_aliases(spec.get("kind")),
                 amount=_amount(spec.get("amount")), effect=effect,
                 direction_required=bool(spec.get("direction_required", False)), precision=precision,
                 abs_tol=float(spec.get("abs_tol") or 0.0), rel_tol=float(spec.get("rel_tol") or 0.0),
                 negation=_negation(spec))


__all__ = ["PRECISIONS", "TERMS", "Claim", "Figure", "Unit", "Verdict", "claim_from_spec", "direction", "figures",
           "grade", "matches", "sentences", "term_patterns", "unit_text", "units"]
