"""How long this turn waited for the model provider's capacity, as the attempt's gateway measured it.

The entrypoint (agent_sandbox.turn) asks when the turn's budget is up: a turn is given its budget
plus that wait, so time spent queued behind the provider's rate limits is never charged to the
agent. The wait counts only while none of the attempt's calls is being served (a flood gains
nothing while its own calls are answered), and the extension is capped at three budgets: a turn
never runs longer than four times its budget, however long the provider's queue. The gateway answers for this attempt's key only; the
runtime's hard deadline asks the gateway's control side, so nothing here can stretch it.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

PROVIDER_WAIT_URL_ENV = "PB_PROVIDER_WAIT_URL"
PROVIDER_WAIT_KEY_ENV = "PB_PROVIDER_WAIT_KEY"
MAX_EXTENSION = 3.0  # budgets: the most a turn is extended by its provider wait


def provider_wait_s(timeout_s: float = 3.0) -> float:
    """The gateway's provider wait for the current turn; 0 when none is declared or it does not answer."""
    url, key = os.environ.get(PROVIDER_WAIT_URL_ENV), os.environ.get(PROVIDER_WAIT_KEY_ENV)
    if not url or not key:
        return 0.0
    request = urllib.request.Request(url, headers={"x-api-key": key})
    # No proxy from the environment: the gateway is on the attempt network.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout_s) as resp:
            doc = json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return 0.0
    value = doc.get("provider_wait_s") if isinstance(doc, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0


def extended_deadline(start: float, budget_s: float, wait_s: float) -> float:
    """When the turn ends: its budget plus the provider wait, the wait capped at MAX_EXTENSION budgets."""
    return start + budget_s + min(max(0.0, wait_s), MAX_EXTENSION * budget_s)
