"""Argv templates of command systems: `{prompt_file}`, `{workspace}`, `{out_dir}`, `{budget_s}`.

Shared by `systems.py` (validation on the host) and `turn.py` (rendering inside the sandbox),
so it uses the standard library only.

Only the four placeholders are replaced; every other brace is left alone, so inline shell
(`${HOME}`, `{ ...; }`) and JSON (`{"a": 1}`) need no escaping. A bare `{word}` that is not
one of the four (and not shell's `${word}`) is refused, because it is almost surely a typo.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

TEMPLATE_FIELDS = ("prompt_file", "workspace", "out_dir", "budget_s")
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def check_template(word: str) -> None:
    """ValueError if the word uses a `{placeholder}` other than the known four."""
    for match in _PLACEHOLDER.finditer(word):
        if match.group(1) not in TEMPLATE_FIELDS:
            allowed = ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS)
            raise ValueError(f"unknown placeholder {match.group(0)} in {word!r}; allowed: {allowed}")


def render_argv(argv: Sequence[str], values: Mapping[str, object]) -> list[str]:
    """Fill the placeholders of every argv word."""
    missing = [f for f in TEMPLATE_FIELDS if f not in values]
    if missing:
        raise ValueError(f"no value for placeholder(s): {', '.join(missing)}")
    out = []
    for word in argv:
        check_template(word)
        out.append(_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), word))
    return out
