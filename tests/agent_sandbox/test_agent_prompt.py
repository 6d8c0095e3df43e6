"""The turn prompt: fixed preamble (runtime guide §5) + request; deterministic; clear errors."""
from __future__ import annotations

import pytest

from agent_sandbox.prompt import render_prompt

META = {
    "company": "Northgate Valve Co.",
    "agent_user": "dana.whitfield",
    "agent_name": "Dana Whitfield",
    "agent_title": "AP Specialist",
    "agent_token": "secret-token-never-in-prompt",
}
TURN = {
    "n": 1,
    "date": "2026-10-05",
    "from_user": "maya.chen",
    "from_name": "Maya Chen",
    "from_title": "AP Manager",
    "request": "Please work the AP inbox today.\nPost what is clean.  \n",
    "budget_s": 1200,
}


def test_preamble_names_user_date_erp_and_handbook() -> None:
    text = render_prompt(META, TURN)
    assert text.startswith("You work at Northgate Valve Co. You are signed in")  # no doubled full stop
    assert "Dana Whitfield (user id dana.whitfield), AP Specialist." in text
    assert "Monday, 2026-10-05" in text
    assert "`erp docs`" in text and "handbook/" in text
    assert "Message from Maya Chen (AP Manager):\n\nPlease work the AP inbox today.\nPost what is clean.\n" in text
    assert text.endswith("Post what is clean.\n")
    assert "secret-token" not in text


def test_deterministic_and_insensitive_to_trailing_space() -> None:
    a = render_prompt(META, TURN)
    b = render_prompt(dict(META), {**TURN, "request": "Please work the AP inbox today.\r\nPost what is clean.\n\n"})
    assert a == b


def test_weekday_is_not_locale_dependent() -> None:
    assert "Sunday, 2026-11-29" in render_prompt(META, {**TURN, "date": "2026-11-29"})


@pytest.mark.parametrize(
    ("meta", "turn", "message"),
    [
        ({**META, "agent_title": ""}, TURN, "agent_title"),
        ({k: v for k, v in META.items() if k != "company"}, TURN, "company"),
        (META, {**TURN, "date": "05/10/2026"}, "YYYY-MM-DD"),
        (META, {k: v for k, v in TURN.items() if k != "request"}, "request"),
    ],
)
def test_missing_fields_are_named(meta: dict, turn: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        render_prompt(meta, turn)
