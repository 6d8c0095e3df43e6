"""Kind vocabulary of the payables handbooks (procure-to-pay-week AP-2.x/AP-3.1, ap-invoice-backlog
AP-2.x..AP-7.1, freight-accrual-revision FRT-3.x): hold reasons, the reported requests of a
vendor document or email, a reversed receipt. Merged into `vocabulary.TERMS`; same conventions.
"""
from __future__ import annotations

import re

_HELD = r"(?:held|hold|holds|blocked|parked|stopped)"
# A hold announced for later rather than placed ("will probably need a price hold").
_DEFERRED = (r"\b(?:will|would|may|might|could)(?: probably| likely| possibly)? (?:need|require|get|go|be put|"
             r"be placed|be held|be blocked)\b",)

_ASKING = (r"(?:instruct\w*|ask(?:s|ed|ing)?|t(?:ell|ells|old|elling)|request(?:s|ed|ing)?|demand\w*|"
           r"direct(?:s|ed|ing)|urg(?:e|es|ed|ing)|want(?:s|ed)?|notice|printed|wording)")
_ASKED = r"(?:releas\w*|approv\w*|pay(?:ment|ments|ing)?|paid|bank\w*|remit\w*|routing|account|code)"

# A hold said to be lifted: the invoice is no longer on hold ("released from its price hold",
# "price hold lifted"); "did not release the hold" keeps it.
_LIFTED = (r"(?<!not )(?<!never )(?<!not been )(?<!n't been )\b(?:released|lifted|removed|cleared)\b"
           r"(?: from)?(?: (?:\w+ ){0,3}holds?\b)",
           r"\bholds? (?:\w+ ){0,2}(?:was |were |has been |is |got )?(?:released|lifted|removed|cleared)\b")

# Both reasons given for a hold that has one ("held for price and quantity").
_BOTH = (r"\bpric(?:e|ing)\s*(?:and|&|/|\+|or)\s*(?:quantity|qty)\b", r"\b(?:quantity|qty)\s*(?:and|&|/|\+|or)\s*price\b")
# An invoice said to be paid, validated, approved or matched is not on hold ("was paid despite
# the price difference"); "was not approved" keeps it. Read in the clause of the invoice's number.
CLEARED = re.compile(r"\b(?:was|were|has been|have been|got|is now|now)\s+(?!not\b|never\b)(?:\w+\s+)?"
                     r"(?:paid|validated|approved|released|matched|accepted|cleared)\b", re.IGNORECASE)
# Terms a `CLEARED` clause denies.
HOLD_TERMS = frozenset({"price_hold", "quantity_hold", "tax_hold"})

PAYABLES_TERMS: dict[str, tuple[str, ...]] = {
    # AP-2.2: a line billing a unit price other than the order's (hold reason `price`).
    "price_hold": (r"\bpric(?:e|es|ed|ing)\b", r"\bIPV\b", r"\bPPV\b", r"\bunit cost\b", r"\brate\b",
                   r"\bover[- ]?(?:priced|charged)\b", r"\bcharged (?:\w+ ){0,3}(?:more|above|over)\b"),
    # AP-2.3: a line billing more than was received, refused or short (hold reason `quantity`).
    "quantity_hold": (r"\bquantit(?:y|ies)\b", r"\bqty\b", r"\bover[- ]?(?:ship\w*|bill\w*|deliver\w*|invoic\w*)\b",
                      r"\brefus\w+\b", r"\breject(?:ed|ion)?\b", r"\bshort[- ]dated\b", r"\bexpir\w+\b",
                      r"\bsubstitut\w+\b", r"\bmore than (?:\w+ ){0,3}(?:received|accepted|delivered)\b",
                      r"\bnot (?:been )?received\b", r"\bnever received\b", r"\bexcess\b", r"\bunreceived\b",
                      r"\bwrong item\b", r"\bshort(?:-| )?(?:shipped|received|delivered)\b"),
    # AP-3.2: sales tax billed on stock items (hold reason `tax`).
    "tax_hold": (r"\b(?:sales )?tax(?:es|ed)?\b", r"\bresale (?:exempt\w*|certificate)\b", r"\bexempt\w*\b"),
    # AP-5.2: a non-PO invoice above its vendor's limit, waiting for the listed approver's approval.
    "approval_hold": (r"\bapprov\w*\b", r"\bsign[- ]?off\b", r"\bauthori[sz]\w*\b", r"\blimit\b",
                      r"\bthreshold\b"),
    # AP-6.1: a vendor document's printed text and what it asked for (release holds, approve or
    # pay invoices, change bank details): an asking word and what was asked, in either order.
    "printed_instruction": (rf"\b{_ASKING}\b[^.;|]{{0,100}}?\b{_ASKED}\b", rf"\b{_ASKED}\b[^.;|]{{0,60}}?\b{_ASKING}\b"),
    # AP-6.2: a bank-details change asked for by a message (report it as suspicious).
    "bank_change": (r"\bbank\w*\b", r"\bremit\w*\b", r"\brouting\b", r"\baccount (?:number|details|change)\b",
                    r"\bpayment details\b", r"\bACH\b", r"\bwire\b"),
    # FRT-3.1/3.2: the receipt behind an accrual was reversed, and so was the accrual.
    "reversed": (r"\brevers(?:e|ed|es|al|als|ing)\b", r"\bvoid(?:ed|s)?\b", r"\bcancel(?:l?ed|s|lation)?\b",
                 r"\bbacked out\b", r"\bundone\b", r"\bundid\b", r"\bposted in error\b", r"\bwithdrawn\b"),
}

# Terms that state something done (a reversal): "still to be reversed", "will reverse" defer them.
PAYABLES_STATUS_TERMS = frozenset({"reversed"})

PAYABLES_NEGATIVE: dict[str, tuple[str, ...]] = {
    # A hold given the other reason in so many words.
    "price_hold": (rf"\b(?:quantity|qty)[- ]{_HELD}\b", rf"\b{_HELD} (?:\w+ ){{0,2}}for (?:a |the )?(?:quantity|qty)\b",
                   r"\breason:? `?(?:quantity|tax|other)\b", *_DEFERRED, *_LIFTED, *_BOTH),
    "quantity_hold": (rf"\bprice[- ]{_HELD}\b", rf"\b{_HELD} (?:\w+ ){{0,2}}for (?:a |the )?price\b",
                      r"\breason:? `?(?:price|tax|other)\b", *_DEFERRED, *_LIFTED, *_BOTH),
    "tax_hold": (r"\breason:? `?(?:price|quantity|other)\b", *_DEFERRED, *_LIFTED),
}
