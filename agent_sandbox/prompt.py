"""The turn prompt: the fixed preamble of the runtime guide §5, then the manager's request.

The preamble names the company, the user the agent is signed in as (name, user id, title), the
business date with its weekday, the `erp` command (`erp docs` for help) and `handbook/` in the
workspace. Then "Message from <name> (<title>):" and the request, as written in turns.yaml.
The same inputs always give the same text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

PREAMBLE = """\
You work at {company} You are signed in to the company's ERP as {agent_name} \
(user id {agent_user}), {agent_title}.
Today's business date is {weekday}, {date}.

The `erp` command is on your PATH and talks to the ERP for you; run `erp docs` for the API \
reference and `erp help` for its usage (ERP_URL and ERP_TOKEN are set in your environment).
{interface_note}The company handbook is in handbook/ in your working directory; its policies apply to your work.
Nobody can answer questions during this session: do the work through the ERP, then end \
the session.
"""

# The interface a cell declares (issue 17): `cli` is the `erp` command and the HTTP API above;
# `mcp` also gives the ERP's MCP server, whose tools are the API's operations.
INTERFACE_NOTES = {
    "cli": "",
    "mcp": "The ERP is also connected to you as the MCP server `bb-erp`: its tools are the API's operations \
(the tool name is the operation id) and act as you, like the `erp` command (its URL is in ERP_MCP_URL).\n",
}

REQUEST = """\
Message from {from_name} ({from_title}):

{request}
"""


def _need(source: Mapping[str, Any], key: str, what: str) -> str:
    """A non-empty string field, or a ValueError naming it."""
    value = source.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"render_prompt: {what} has no {key!r}")
    return str(value).strip()


def render_prompt(meta: Mapping[str, Any], turn: Mapping[str, Any], *, interface: str = "cli") -> str:
    """The full prompt of one turn.

    `meta` is scenario.json (`company`, `agent_user`, `agent_name`, `agent_title`); `turn` is
    one entry of turns.yaml (`date`, `from_name`, `from_title`, `request`); `interface` is the
    cell's (`cli` or `mcp`), which the preamble names.
    """
    if interface not in INTERFACE_NOTES:
        raise ValueError(f"render_prompt: unknown interface {interface!r} (known: {', '.join(INTERFACE_NOTES)})")
    date_text = _need(turn, "date", "the turn")
    try:
        date = dt.date.fromisoformat(date_text)
    except ValueError:
        raise ValueError(f"render_prompt: the turn's date is not YYYY-MM-DD: {date_text!r}") from None
    head = PREAMBLE.format(
        company=_sentence_end(_need(meta, "company", "scenario meta")),
        agent_name=_need(meta, "agent_name", "scenario meta"),
        agent_user=_need(meta, "agent_user", "scenario meta"),
        agent_title=_need(meta, "agent_title", "scenario meta"),
        weekday=_WEEKDAYS[date.weekday()],
        date=date.isoformat(),
        interface_note=INTERFACE_NOTES[interface],
    )
    # Normalise line endings and trailing space so YAML block styles cannot change the bytes.
    request = "\n".join(line.rstrip() for line in _need(turn, "request", "the turn").replace("\r\n", "\n").split("\n"))
    body = REQUEST.format(
        from_name=_need(turn, "from_name", "the turn"),
        from_title=_need(turn, "from_title", "the turn"),
        request=request.strip("\n"),
    )
    return head + "\n" + body


def _sentence_end(text: str) -> str:
    """`Northgate Valve Co.` stays as is; `Acme` becomes `Acme.` (no doubled full stop)."""
    return text if text.endswith((".", "!", "?")) else text + "."


# Spelled out rather than strftime("%A") so the locale cannot change the prompt.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
