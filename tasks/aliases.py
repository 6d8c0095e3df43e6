"""The names a reviewer accepts for a party in a written answer (truth vocabulary).

A generator puts these lists in truth.json `values` for `text_claims` checks: a company named
"Ohio Packaging Co." may be written with or without its legal suffix.
"""
from __future__ import annotations

import re

_SUFFIX = re.compile(r"[,\s]+(?:Co\.?|Company|Inc\.?|Incorporated|LLC|L\.L\.C\.|Ltd\.?|Limited|Corp\.?|Corporation)$",
                     re.IGNORECASE)


def party_aliases(name: str) -> list[str]:
    """`name` as the ERP spells it, and without its legal suffix when what remains still names
    it (two words or more)."""
    out = [name]
    short = _SUFFIX.sub("", name).strip()
    if short != name and len(short.split()) >= 2:
        out.append(short)
    return out
