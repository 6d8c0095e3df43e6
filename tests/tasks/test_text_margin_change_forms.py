"""margin-bridge's "margins and change stated", both ways, on the forms a reviewer writes the
change in: a direction word alone ("..., down $X", "$X lower", "falling by $X", "a $X gain"),
a sign, a table row; and the wrong ones (the other direction, months swapped, no change, no
margins, a wrong amount). Seeds 0 (margin falls) and 3 (margin rises)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.text_answers import text_checks, truth, verdicts

TASK, CHECK = "margin-bridge", "margins and change stated"


def _forms(seed: int) -> tuple[list[str], list[str]]:
    f = truth(TASK, seed)["facts"]
    prior, month, change = f["prior"]["margin"] / 100, f["month"]["margin"] / 100, f["change_cents"] / 100
    falls = change < 0
    a, b, c, r = f"${prior:,.2f}", f"${month:,.2f}", f"${abs(change):,.2f}", f"${abs(change):,.0f}"
    down = ("down", "fell", "decrease", "lower", "falling", "drop")
    up = ("up", "rose", "increase", "higher", "rising", "gain")
    w, x = (down, up) if falls else (up, down)
    sign = "-" if falls else "+"
    cell = f"({c})" if falls else c
    good = [
        f"Gross margin was {a} in August and {b} in September, {w[0]} {c}.",
        f"Gross margin {w[1]} by {r}, from {a} in August to {b} in September.",
        f"September gross margin of {b} is {c} {w[3]} than August's {a}.",
        f"Gross margin: August {a}; September {b}; change {sign}{c}.",
        f"August gross margin: {a}. September gross margin: {b}. That is a {w[2]} of {c}.",
        f"GM went from {a} (Aug) to {b} (Sep), {w[4]} by {r}.",
        f"| Month | Gross margin |\n|---|---|\n| August 2026 | {a} |\n| September 2026 | {b} |\n| Change | {cell} |\n",
        f"Gross margin was {a} in August and {b} in September, which is {c} {w[3]}.",
        f"Margin moved from {a} in August to {b} in September — a {r} {w[5]}.",
    ]
    bad = [
        f"Gross margin was {a} in August and {b} in September, {x[0]} {c}.",
        f"Gross margin {x[1]} by {r}, from {a} in August to {b} in September.",
        f"Gross margin was {b} in August and {a} in September, {w[0]} {c}.",
        f"Gross margin was {a} in August and {b} in September.",
        f"Gross margin {w[1]} by {r}.",
        f"Gross margin was {a} in August and {b} in September, {w[0]} ${abs(change) * 1.1:,.2f}.",
    ]
    return good, bad


@pytest.mark.parametrize("seed", [0, 3])
def test_the_change_is_read_in_the_forms_a_reviewer_accepts(seed: int, tmp_path: Path) -> None:
    checks = {CHECK: text_checks(TASK, truth(TASK, seed))[CHECK]}
    good, bad = _forms(seed)
    wrong = []
    for answer in good:
        passed, detail = verdicts(checks, "answer.md", answer, tmp_path)[CHECK]
        if not passed:
            wrong.append(f"rejected: {answer!r}: {detail}")
    for answer in bad:
        passed, detail = verdicts(checks, "answer.md", answer, tmp_path)[CHECK]
        if passed:
            wrong.append(f"passed: {answer!r}")
    assert not wrong, "\n".join(wrong)
