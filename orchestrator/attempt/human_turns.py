"""Turns worked by a person in the browser (human baseline mode, spec §12).

Instead of an agent container, the attempt starts the web UI (orchestrator/services/web.py)
beside the ERP — on docker in its own container from the ERP image, published on host loopback
only — and, for each turn, opens the turn on the UI's board (the request, the budget's countdown)
and waits until the person presses "End turn" or the budget runs out. Then the clock advances as
after any turn, and the attempt is graded like any other. A person who lets the budget run out
has not failed: the turn simply ends there (a note on the turn says so).

Where the person goes is written to `<attempt>/human.json` (the sign-in link) and printed on
stderr; the link holds a one-time secret, so another local user cannot act as the person.
"""
from __future__ import annotations

import json
import secrets
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from orchestrator.backends.base import TurnRun
from orchestrator.cells import is_human_system
from orchestrator.errors import Phase
from orchestrator.logs import get_logger
from orchestrator.services.web import WebEndpoints, WebLaunch, WebUnhealthy, start_web

log = get_logger(__name__)
POLL_S = 0.5


@dataclass
class HumanTurns:
    """The web UI of one attempt and the turns a person works in it."""

    web: WebEndpoints
    host_token: str
    turns_total: int
    cancel: threading.Event | None = None

    def _http(self) -> httpx.Client:
        return httpx.Client(base_url=self.web.url, timeout=10, trust_env=False,
                            headers={"Authorization": f"Bearer {self.host_token}"})

    def run_turn(self, n: int, date: str, request: str, from_name: str, budget_s: float) -> TurnRun:
        """Open turn `n` on the UI and wait for its end (the button, the budget, or a cancel)."""
        t0 = time.monotonic()
        with self._http() as http:
            r = http.post("/_turn", json={"n": n, "of": self.turns_total, "date": date, "request": request,
                                          "from_name": from_name, "budget_s": budget_s})
            if r.status_code != 200:
                raise WebUnhealthy(f"the web UI refused to open turn {n}: HTTP {r.status_code}", phase=Phase.TURN)
            log.info("human_turn_open", turn=n, budget_s=budget_s)
            ended_by = None
            while ended_by is None:
                if self.cancel is not None and self.cancel.wait(POLL_S):
                    http.post("/_turn/close", json={})
                    ended_by = "cancel"
                    break
                if self.cancel is None:
                    time.sleep(POLL_S)
                try:
                    state = http.get("/_turn").json()
                except (httpx.HTTPError, ValueError) as exc:
                    raise WebUnhealthy(f"the web UI stopped answering during turn {n}: {exc}", phase=Phase.TURN) from exc
                if state.get("turn") == n and not state.get("open"):
                    ended_by = str(state.get("ended_by") or "budget")
                elif time.monotonic() - t0 > budget_s + 5:  # the UI's own clock should have closed it
                    http.post("/_turn/close", json={})
                    ended_by = "budget"
        duration = time.monotonic() - t0
        note = {"person": "ended by the person (End turn)", "budget": "ended by the turn budget",
                "host": "ended by the host", "cancel": "cut short by a cancel"}.get(ended_by, ended_by)
        log.info("human_turn_closed", turn=n, ended_by=ended_by, duration_s=round(duration, 1))
        return TurnRun(exit_code=0, timed_out=False, duration_s=duration, detail={"notes": [note], "ended_by": ended_by})

    def finish(self) -> None:
        """No more turns: the UI shows that the attempt is over."""
        try:
            with self._http() as http:
                http.post("/_turn/close", json={"finished": True})
        except httpx.HTTPError:
            pass  # the UI is stopped next anyway


def open_human(run: Any) -> HumanTurns | None:
    """Start the web UI for a human cell (None for any other system); write `human.json`."""
    if not is_human_system(run.spec.cell.system):
        return None
    login_key, host_token = secrets.token_urlsafe(24), secrets.token_hex(24)
    launch = WebLaunch(agent_url=run.erp.agent_url, user_token=run.agent_token, login_key=login_key,
                       host_token=host_token, handbook_dir=Path(run.scenario.handbook_dir))
    web = start_web(run, launch)
    info = {"url": web.url, "login_url": web.login_url, "system": run.spec.cell.system, "cell": str(run.spec.cell),
            "turns": len(run.resolved.turns), "isolation": run.backend.isolation}
    (run.paths.root / "human.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    print(f"\nbb-erp is open for you at {web.login_url}\n(open it in a browser on this machine; "
          f"{len(run.resolved.turns)} turn(s) follow)\n", file=sys.stderr, flush=True)
    return HumanTurns(web, host_token, len(run.resolved.turns), run.cancel)
