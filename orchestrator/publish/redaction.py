"""Redaction for publication: credentials and restricted values out of every published file.

What is secret here:

- **credentials**: the ERP users' API tokens (the final databases' `tokens` table and every
  scenario's `agent_token`), the gateway's per-attempt virtual keys (`pbv-…`), the real provider
  keys named by a model-access declaration (read on the publishing host, never written), and
  anything shaped like a provider key or a bearer token;
- **restricted values**: the values of the information-flow classes the campaign's tasks declare
  restricted (their `disclose_restricted` checks' `classes`), read from the final databases with
  the grader's own query (`orchestrator.grading.rules.disclosure.restricted_values`) and found in
  any written form with the grader's matcher (`orchestrator.grading.restricted_forms`).

A text is redacted in two passes: every credential is replaced by `[credential]` and every run of
digits (with short separators) that holds more than four consecutive digits of a restricted
value loses all its digits but the last four (the last four stay readable, as the ERP itself
shows them); then the grader's matcher is run on the result, and a text in which it still finds
a value (spelled out, encoded, assembled from parts) is replaced whole. JSON texts are redacted
value by value so their structure — and so the event order of a trace — is kept.

What replaces a restricted value says whether the grader counts it (so that a bundle's
disclosure checks can be re-graded without the values, orchestrator/publish/disclosure.py):
where the grader's own reading of the text — its matcher, after the references the attempt's
database holds and calendar dates are blanked (`disclosure.mask_references`) — finds the value,
it becomes a placeholder naming its class and owner, never the value: `[restricted vendor_bank
V-0127]6997` (a digit run, its last four kept), `[restricted employee ben.carter]` (a text, an
amount, or a whole text the matcher still read a value in). Digits that only look like part of a
value to the redactor (a date, a reference) are masked without a name (`•••••6997`, `[restricted]`).
Text the records already held in a placeholder's shape is neutralised first (`[(as written)
restricted …]`), so a placeholder in a bundle is always the redactor's.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from orchestrator.grading.restricted_forms import ALLOWED_DIGITS, Forms, amounts, find_digits, segments, squash
from orchestrator.grading.rules.disclosure import mask_references

CREDENTIAL = "[credential]"  # a credential known only by its shape; known ones are numbered
RESTRICTED_WHOLE = "[redacted: restricted value]"  # a whole text: a value the grader does not count
RESTRICTED_PART = "[restricted]"                   # a text value or an amount the grader does not count
MASK = "•"
# A restricted value the grader counts, by class and owner (the value itself is never written).
PLACEHOLDER = re.compile(r"\[restricted ([a-z_]+) ([^\[\]\s]+)\]")
PLACEHOLDER_START = "[restricted "
AS_WRITTEN = "[(as written) restricted "  # a placeholder-shaped text the records held already
# Shapes of credentials, whatever their source (the literal values found are replaced too).
CREDENTIAL_PATTERNS = (
    re.compile(r"pbv-[A-Za-z0-9_\-]{16,}"),                       # gateway virtual keys
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{10,}"),                    # Anthropic keys
    re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),            # OpenAI keys
    re.compile(r"\bngv_[0-9a-f]{16,}"),                           # bb-erp user tokens, as generated
    re.compile(r"\bpbt_[A-Za-z0-9_\-]{32,}"),                     # bb-erp user tokens, as an attempt issues them
)
# A credential after a header or variable name: keep the name, drop the value.
CREDENTIAL_AFTER = re.compile(
    r"(?i)((?:bearer\s+|authorization[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?|x-api-key[\"']?\s*[:=]\s*[\"']?"
    r"|api_key[\"']?\s*[:=]\s*[\"']?|_token[\"']?\s*[:=]\s*[\"']?))([A-Za-z0-9._~+/\-]{16,})")
# Digests and hex ids (sha256, an attempt id's hash part): hex of 8+ characters, letters and
# digits mixed, or a whole sha1/sha256.
# ISO date-times (the records' clocks: their fractions of a second are noise too).
_DIGEST = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-f]{64}|[0-9a-f]{40}|(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,})(?![0-9A-Za-z])"
                     r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?")


def _inside_digest(text: str, run: re.Match[str]) -> bool:
    """True when a digit run is part of a digest or hex id (never a value)."""
    return any(d.start() <= run.start() and run.end() <= d.end() for d in _DIGEST.finditer(text, max(0, run.start() - 64),
                                                                                           run.end() + 64))
MIN_LITERAL = 8  # shorter literal "credentials" would redact ordinary words


@dataclass(frozen=True)
class RestrictedValue:
    """One restricted value: its class, owner (a record id, never secret) and the value in the
    grader's form (digits, squashed text, or an amount `1234.56`)."""

    cls: str
    owner: str
    value: str
    kind: str

    @property
    def placeholder(self) -> str:
        """What stands in a bundle where the grader counts this value: class and owner."""
        return f"{PLACEHOLDER_START}{self.cls} {self.owner}]"


def placeholders(values: Iterable[RestrictedValue]) -> str:
    """The placeholders of some values, one per class and owner, in a stable order."""
    return "".join(dict.fromkeys(r.placeholder for r in sorted(values, key=lambda r: (r.cls, r.owner))))


@dataclass
class Secrets:
    """Everything to keep out of a bundle, and counts of what was redacted (never the values)."""

    credentials: set[str] = field(default_factory=set)
    restricted: list[RestrictedValue] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    # The references (record ids) of the attempt being redacted, as the grader blanks them.
    references: set[str] = field(default_factory=set)
    # Neutralise placeholder-shaped text the records held (off when redacting the bundle's own output).
    neutralize: bool = True
    _grams: set[str] | None = field(default=None, repr=False)
    _by_value: dict[RestrictedValue, set[str]] = field(default_factory=dict, repr=False)
    _done: dict[str, str] = field(default_factory=dict, repr=False)

    def add_credential(self, value: Any) -> None:
        """Add a literal credential (ignored when too short to be one)."""
        if isinstance(value, str) and len(value.strip()) >= MIN_LITERAL:
            self.credentials.add(value.strip())

    def add_restricted(self, values: Iterable[RestrictedValue]) -> None:
        """Add restricted values (deduplicated, kept in a stable order)."""
        self.restricted = sorted(set(self.restricted) | set(values), key=lambda r: (r.cls, r.owner, r.kind, r.value))
        self._grams = None

    def grams(self) -> set[str]:
        """Every run of ALLOWED_DIGITS + 1 digits of a digit value, forwards and reversed."""
        if self._grams is None:
            n = ALLOWED_DIGITS + 1
            out: set[str] = set()
            for r in self.restricted:
                if r.kind == "digits":
                    for v in (r.value, r.value[::-1]):
                        out.update(v[i:i + n] for i in range(len(v) - n + 1))
            self._grams = out
        return self._grams

    # --- finding -------------------------------------------------------------------------------

    def found_in(self, text: str) -> list[str]:
        """What of the secrets `text` still holds, by name (`credential`, `restricted vendor_bank:V-0101`)."""
        out = []
        if any(c in text for c in self.credentials) or any(p.search(text) for p in CREDENTIAL_PATTERNS) \
                or CREDENTIAL_AFTER.search(text):
            out.append("credential")
        if PLACEHOLDER_START in text:
            text = self._without_placeholders(text)
        if self.restricted and _maybe_restricted(text):
            # Digests and hex ids are the records' own: their digit runs are noise.
            forms = Forms.of(_DIGEST.sub(" ", text))
            canon = forms.all_canon()
            # find_digits is the costly part: only values with a run of five of their digits in
            # the text's digits (a necessary condition for every hit it reports) are tried.
            present = {g for c in canon for g in _windows(re.sub(r"\D", "", c))}
            for r in self.restricted:
                if r.kind == "digits" and not (present & self.value_grams(r)):
                    continue
                if _holds(r, forms, canon):
                    out.append(f"restricted {r.cls}:{r.owner}")
        return out

    def found_in_value(self, value: Any) -> list[str]:
        """`found_in` over every string of a JSON value, one string at a time (as the grader
        reads one message at a time), and over integers long enough to be a value."""
        if isinstance(value, str):
            return self.found_in(value)
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return []
        if isinstance(value, int):
            return self.found_in(str(value)) if abs(value) >= 10 ** (ALLOWED_DIGITS + 1) else []
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
        out: list[str] = []
        for v in items:
            out += [f for f in self.found_in_value(v) if f not in out]
        return out

    def found_in_file(self, name: str, text: str) -> list[str]:
        """`found_in` for a file's text: JSON (lines) value by value, other text line by line."""
        out: list[str] = []
        for line in text.splitlines() if not name.endswith(".json") else [text]:
            if not line.strip():
                continue
            found: list[str]
            try:
                found = self.found_in_value(json.loads(line)) if name.endswith((".json", ".jsonl")) else self.found_in(line)
            except ValueError:
                found = self.found_in(line)
            out += [f for f in found if f not in out]
        return out

    def _without_placeholders(self, text: str) -> str:
        """`text` with the placeholders of known values blanked (they name an owner, not a value)."""
        owners = {(r.cls, r.owner) for r in self.restricted}
        return PLACEHOLDER.sub(lambda m: " " if (m.group(1), m.group(2)) in owners else m.group(0), text)

    def counted_in(self, text: str) -> set[RestrictedValue]:
        """The values the grader's own reading of `text` finds (see the module docstring): its
        matcher on the text with the attempt's references and calendar dates blanked."""
        if not self.restricted or not _maybe_restricted(text):
            return set()
        forms = Forms.of(text, mask=lambda t: mask_references(t, self.references))
        canon = forms.all_canon()
        present = {g for c in canon for g in _windows(re.sub(r"\D", "", c))}
        return {r for r in self.restricted
                if (r.kind != "digits" or present & self.value_grams(r)) and _holds(r, forms, canon)}

    def attachment(self, text: str) -> bytes | None:
        """What replaces an attachment whose text holds a secret (None: it holds none): a note,
        with the placeholders of the values the grader counts in it."""
        found = self.found_in(text)
        if not found:
            return None
        self.counts["attachment"] += 1
        named = placeholders(self.counted_in(text))
        return f"[redacted attachment: it held {', '.join(sorted(set(f.split(':')[0] for f in found)))}]{named}".encode()

    def value_grams(self, r: RestrictedValue) -> set[str]:
        """The runs of five digits of one digit value, forwards and reversed."""
        got = self._by_value.get(r)
        if got is None:
            got = _windows(r.value) | _windows(r.value[::-1])
            self._by_value[r] = got
        return got

    # --- redacting ------------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """`text` with every credential and restricted value taken out (see the module docstring)."""
        if not text:
            return text
        done = self._done.get(text)
        if done is None:
            before = self.counts.copy()
            done = self._text(text)
            if self.counts == before:
                self._done[text] = done  # only texts with nothing to count: the counts stay true
        return done

    def _text(self, text: str) -> str:
        original = text
        counted: set[RestrictedValue] | None = None

        def graded() -> set[RestrictedValue]:
            # Only when something is replaced: the grader's full reading is the costly part.
            nonlocal counted
            if counted is None:
                counted = self.counted_in(original)
            return counted

        out = text
        if self.neutralize and PLACEHOLDER_START in out:
            self.counts["placeholder-shaped text"] += out.count(PLACEHOLDER_START)
            out = out.replace(PLACEHOLDER_START, AS_WRITTEN)
        # Each known credential gets its own placeholder, so distinct tokens stay distinct (a
        # database's unique columns, a reader following which token acted); the number is the
        # credential's rank in sorted order and says nothing about it.
        numbered = {c: i for i, c in enumerate(sorted(self.credentials), 1)}
        for literal in sorted(self.credentials, key=len, reverse=True):
            if literal in out:
                self.counts["credential"] += out.count(literal)
                out = out.replace(literal, f"[credential {numbered[literal]}]")
        for pat in CREDENTIAL_PATTERNS:
            out, n = pat.subn(CREDENTIAL, out)
            self.counts["credential"] += n
        out, n = CREDENTIAL_AFTER.subn(lambda m: m.group(1) + CREDENTIAL, out)
        self.counts["credential"] += n
        if not self.restricted:
            return out
        if self.grams():
            out = self._mask_digits(out, graded)
        for r in self.restricted:
            if r.kind == "text":
                pat = re.compile(r"[\W_]+".join(re.escape(w) for w in r.value.split()), re.IGNORECASE)
                if pat.search(out):
                    out, n = pat.subn(r.placeholder if r in graded() else RESTRICTED_PART, out)
                    self.counts[f"restricted {r.cls}"] += n
        cents = [r for r in self.restricted if r.kind == "cents"]
        if cents:
            out = _AMOUNT_ANY.sub(lambda m: self._mask_amount(m.group(0), cents, graded), out)
        if self.found_in(out):
            self.counts["restricted (whole text)"] += 1
            return placeholders(graded()) or RESTRICTED_WHOLE
        return out

    def _mask_digits(self, text: str, graded: Callable[[], set[RestrictedValue]]) -> str:
        """Take out the digit runs that disclose a value: a run holding five consecutive digits of
        one, and consecutive runs, apart by at most three separator characters, whose digits
        together are five or more consecutive digits of one (`4417 2290 1183`). All but the last
        four digits of what discloses go: replaced by the placeholders of the values it discloses
        that the grader counts in this text, or masked (`•`) when it counts none of them. Every
        other digit is left alone."""
        grams = self.grams()
        runs = [m for m in re.finditer(r"\d+", text) if not _inside_digest(text, m)]
        if not runs:
            return text
        digit_values = [r for r in self.restricted if r.kind == "digits"]
        values = [v for r in digit_values for v in (r.value, r.value[::-1])]
        marked: list[tuple[int, int, set[RestrictedValue]]] = []  # (first run, last run, values) of each disclosure
        for i, m in enumerate(runs):
            windows = _windows(m.group(0))
            if windows & grams:
                marked.append((i, i, {r for r in digit_values if windows & self.value_grams(r)}))
            joined, j = m.group(0), i + 1
            while j < len(runs) and any(joined in v for v in values):
                sep = text[runs[j - 1].end():runs[j].start()]
                if len(sep) > 3 or re.search(r"[^\W_]", sep):
                    break
                joined += runs[j].group(0)
                if len(joined) > ALLOWED_DIGITS and any(joined in v for v in values):
                    marked.append((i, j, {r for r in digit_values if joined in r.value or joined in r.value[::-1]}))
                j += 1
        if not marked:
            return text
        spans: list[tuple[int, int, set[RestrictedValue]]] = []  # overlapping disclosures merged
        for first, last, hit in sorted(marked, key=lambda t: (t[0], t[1])):
            if spans and first <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(last, spans[-1][1]), spans[-1][2] | hit)
            else:
                spans.append((first, last, set(hit)))
        chars = list(text)
        named: list[tuple[int, int, str]] = []  # (start, end, placeholders) replacing text[start:end]
        for first, last, hit in spans:
            positions = [k for r in runs[first:last + 1] for k in range(r.start(), r.end())]
            cut = positions[: max(0, len(positions) - ALLOWED_DIGITS)]
            counted = hit & graded()
            if counted and cut:
                named.append((cut[0], positions[len(cut)], placeholders(counted)))
            else:
                for k in cut:
                    chars[k] = MASK
        self.counts["restricted digits"] += len(spans)
        out = "".join(chars)
        for start, end, text_in_place in reversed(named):
            out = out[:start] + text_in_place + out[end:]
        return out

    def _mask_amount(self, text: str, cents: list[RestrictedValue], graded: Callable[[], set[RestrictedValue]]) -> str:
        found = amounts(text)
        hit = {r for r in cents if r.value in found}
        if hit:
            self.counts["restricted amount"] += 1
            return placeholders(hit & graded()) or RESTRICTED_PART
        return text

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it redacted, keys too (an audit image is keyed by
        record, `journal_entry:JE-10805`, and a key is read like any text); structure and order
        unchanged."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in value.items():
                key = base = self.text(k)
                n = 2
                while key in out:  # two keys redacted alike stay two entries
                    key, n = f"{base} ({n})", n + 1
                out[key] = self.value(v)
            return out
        return value

    def json_text(self, text: str) -> str:
        """A JSON text redacted value by value (so it stays the same JSON); other text as text."""
        stripped = text.strip()
        if stripped[:1] in ("{", "[", '"'):
            try:
                parsed = json.loads(stripped)
            except ValueError:
                return self.text(text)
            redacted = self.value(parsed)
            if redacted == parsed:
                return text
            return json.dumps(redacted, ensure_ascii=False, separators=_separators(stripped))
        return self.text(text)

    def jsonl(self, text: str) -> str:
        """JSON lines redacted line by line: one line out for every line in, in the same order."""
        lines = text.split("\n")
        return "\n".join(self.json_text(line) if line.strip() else line for line in lines)


_AMOUNT_ANY = re.compile(r"\d{1,3}(?:[,\s.']\d{3})+[.,]\d{2}(?!\d)|\d+[.,]\d{2}(?!\d)")
_SPELLED = re.compile(r"(?i)\b(zero|oh|one|two|three|four|five|six|seven|eight|nine|double|triple)\b")


def _separators(text: str) -> tuple[str, str]:
    """The separators a JSON text was written with (compact or Python's default)."""
    return (", ", ": ") if '": ' in text or '", "' in text else (",", ":")


def _windows(digits: str) -> set[str]:
    n = ALLOWED_DIGITS + 1
    return {digits[i:i + n] for i in range(len(digits) - n + 1)}


def _maybe_restricted(text: str) -> bool:
    """Cheap test before the grader's full matcher: digits, spelled digits or something encoded."""
    return bool(re.search(r"\d", text) or _SPELLED.search(text) or re.search(r"[A-Za-z0-9+/=%&\\]{12,}", text))


def _holds(r: RestrictedValue, forms: Forms, canon: list[str]) -> bool:
    if r.kind == "digits":
        if find_digits(forms.segments, r.value) is not None:
            return True
        return any(find_digits(segments(c), r.value) is not None for c in forms.decoded_digits)
    if r.kind == "text":
        return any(r.value and r.value in squash(c) for c in canon)
    return any(r.value in amounts(c) for c in canon)
