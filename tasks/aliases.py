"""The names a reviewer accepts for a party in a written answer (truth vocabulary).

A generator puts these lists in truth.json `values` for `text_claims` checks: a company named
"Ohio Packaging Co." may be written with or without its legal suffix.
"""
from __future__ import annotations

import re

_SUFFIX = re.compile(r"[,\s]+(?:Co\.?|Company|Inc\.?|Incorporated|LLC|L\.L\.C\.|Ltd\.?|Limited|Corp\.?|Corporation)$",
                     re.IGNORECASE)


def party_aliases(name: str) -> list[str]:
    """`name` as the ERP spells it, without its legal suffix when what remains still names it
    (two words or more), and with "and" for "&"."""
    out = [name]
    short = _SUFFIX.sub("", name).strip()
    if short != name and len(short.split()) >= 2:
        out.append(short)
    # "Coastline Seals & Gaskets" is also written "Coastline Seals and Gaskets".
    out += [n.replace("&", "and") for n in out if "&" in n]
    return out
