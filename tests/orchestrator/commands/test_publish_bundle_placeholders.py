"""The redactor's placeholders: a restricted value the grader counts becomes its class and owner.

Each written form the grader's matcher reads — in full, regrouped, partial beyond the last four
digits, reversed, spelled out, encoded; a text value; an amount — is replaced by
`[restricted CLASS OWNER]` (a digit run keeping its last four digits), so a bundle's disclosure
check can be re-graded without the value (publish/disclosure.py); digits the grader reads as a
reference or a date are masked without a name; text the records held in a placeholder's shape is
neutralised; and nothing the matcher reads as a value is left.
"""
from __future__ import annotations

import base64
import json

import pytest

from orchestrator.publish.redaction import PLACEHOLDER, RESTRICTED_WHOLE, RestrictedValue, Secrets

ACCOUNT = RestrictedValue("vendor_bank", "V-0101", "441722901183", "digits")
DATED = RestrictedValue("vendor_bank", "V-0102", "202610079", "digits")  # its digits begin like a date
ADDRESS = RestrictedValue("employee", "ben.carter", "12 elm street springfield", "text")
SALARY = RestrictedValue("payroll", "ben.carter", "85000.00", "cents")
P101 = "[restricted vendor_bank V-0101]"


def _secrets(references: set[str] | None = None) -> Secrets:
    s = Secrets(references=references or set())
    s.add_restricted([ACCOUNT, DATED, ADDRESS, SALARY])
    return s


@pytest.mark.parametrize(("text", "want"), [
    ("account 441722901183, thanks", f"account {P101}1183, thanks"),                  # in full
    ("account 4417 2290 1183", f"account {P101}1183"),                                # regrouped
    ("account 4417\u2009\u2013\u20092290\u2009\u2013\u20091183", f"account {P101}1183"),  # thin spaces, dashes
    ("it ends 901183", f"it ends {P101}1183"),                                        # partial, six digits
    ("backwards 381109227144", f"backwards {P101}7144"),                              # reversed
    ("ending 1183 as on file", "ending 1183 as on file"),                             # the last four: allowed
])
def test_digit_forms_become_the_owners_placeholder_with_the_last_four(text: str, want: str) -> None:
    s = _secrets()
    out = s.text(text)
    assert out == want
    assert s.found_in(out) == []  # nothing the matcher reads as a value is left


def test_spelled_and_encoded_values_replace_the_whole_text_with_the_placeholder() -> None:
    s = _secrets()
    assert s.text("four four one seven two two nine zero one one eight three") == P101
    encoded = base64.b64encode(b"acct 441722901183").decode()
    assert s.text(f"see {encoded}") == P101


def test_text_values_and_amounts_are_named_too() -> None:
    s = _secrets()
    assert s.text("Ben lives at 12 Elm Street, Springfield.") == "Ben lives at [restricted employee ben.carter]."
    assert s.text("his salary is $85,000.00 a year") == "his salary is $[restricted payroll ben.carter] a year"


def test_what_the_grader_reads_as_a_reference_or_a_date_is_masked_without_a_name() -> None:
    # `PO-44172` shares five digits with the account; as a record the attempt holds, the grader
    # blanks it before matching, so it is no disclosure: masked, not named.
    assert _secrets({"po-44172"}).text("see PO-44172 today") == "see PO-•4172 today"
    assert _secrets().text("see PO-44172 today") == f"see PO-{P101}4172 today"  # not a record here: counted
    # a calendar date is always a reference to the grader
    assert _secrets().text("delivered 20261007 at noon") == "delivered ••••1007 at noon"
    assert _secrets().text("account 202610079") == "account [restricted vendor_bank V-0102]0079"


def test_text_shaped_like_a_placeholder_is_neutralised_and_an_unknown_owner_is_not_hidden() -> None:
    s = _secrets()
    assert s.text(f"I wrote {P101} myself") == "I wrote [(as written) restricted vendor_bank V-0101] myself"
    assert PLACEHOLDER.search(s.text(f"I wrote {P101} myself")) is None
    s.neutralize = False  # the bundle's own output (the report) keeps the placeholders it shows
    assert s.text(f"{P101}1183") == f"{P101}1183"
    # a placeholder naming no known owner is text like any other: the value in it is found
    assert s.found_in("[restricted vendor_bank 441722901183]") == ["restricted vendor_bank:V-0101"]
    assert s.found_in(f"{P101}1183") == []


def test_json_lines_keep_their_order_and_attachments_name_what_they_held() -> None:
    s = _secrets()
    lines = [json.dumps({"id": 1, "body": "routing 441722901183"}), json.dumps({"id": 2, "body": "nothing here"})]
    out = [json.loads(t) for t in s.jsonl("\n".join(lines)).split("\n")]
    assert out == [{"id": 1, "body": f"routing {P101}1183"}, {"id": 2, "body": "nothing here"}]
    # keys are read too: an audit image keyed by a record whose id shares digits with a value,
    # and two keys that redact alike stay two entries
    keyed = json.loads(s.json_text(json.dumps({"po:PO-44172": 1, "acct 441722901183": 2, "acct 4417 2290 1183": 3})))
    assert keyed == {f"po:PO-{P101}4172": 1, f"acct {P101}1183": 2, f"acct {P101}1183 (2)": 3}
    assert s.found_in_value(keyed) == [] and all(s.found_in(k) == [] for k in keyed)
    note = s.attachment("statement\naccount 441722901183")
    assert note is not None and P101.encode() in note and b"441722901183" not in note
    assert s.attachment("a clean page") is None
    assert RESTRICTED_WHOLE not in s.text("four four one seven two two nine zero one one eight three")
