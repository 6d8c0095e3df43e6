"""Provider limits at the campaign's scale (issue 42, item 4): the shared limiter, the turn budget
extended by provider waits, the campaign-wide cost budget.

**One limiter service per campaign** (`model_gateway.limiter_service`): the campaign head starts
it when its model access declares `limits:`, and every gateway of every attempt consults it over
HTTP before each upstream call, so the provider's limits are counted in one place across attempts
and executors. Gateways in containers reach it through the same per-attempt host door as a
model served on the host (backends/docker/host_relay.py: the gateway alone, that port alone). A
Ray node's attempts are given the service's address and token in the job (`PB_LIMITER_URL` /
`PB_LIMITER_TOKEN` in the node's environment); the head must then listen on an address the nodes
reach (`PB_LIMITER_BIND`, default loopback: one host). Without a campaign (a single `orchestrate
attempt`) the gateway keeps the limits in its own process.

**Turn budgets are extended, not charged** (decision): a turn may run for its budget plus the
time it waited for the provider's capacity (`model_gateway.wait_clock`: queued or sleeping out a
429, counted only while none of the attempt's calls was being served), capped at three budgets
(agent_sandbox.provider_wait.extended_deadline: a turn never runs past four budgets). The entrypoint in the agent's environment asks the gateway for the
wait when its budget is up; the runtime's hard deadline asks the gateway's control API, which the
agent cannot reach. turns.jsonl records the wait (`usage.provider_wait_s`) and the budget granted.

**Campaign cost budget** (`campaign_max_cost_usd`): before each attempt starts, the spent cost
(the gateway's figures in every finished attempt's result) plus what the attempts in flight may
still spend plus what this one may spend must stay within it; each attempt is counted at the
per-attempt cap `budget.max_cost_usd` when declared (then the budget is never exceeded), else at
the largest cost a finished attempt had (an estimate: said so in the note). An attempt that would
exceed it is not started: it stays not-run (no ledger line, never scored as a failure), and
`cost_budget.json` in the label says why; the summary and the report carry it.
"""
from __future__ import annotations

import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model_gateway.limiter_service import LimiterService
from orchestrator.model_access import ModelAccess

COST_BUDGET_FILE = "cost_budget.json"
LIMITER_URL_ENV, LIMITER_TOKEN_ENV, LIMITER_BIND_ENV = "PB_LIMITER_URL", "PB_LIMITER_TOKEN", "PB_LIMITER_BIND"

_active: LimiterService | None = None
_active_lock = threading.Lock()


def start_campaign_limiter(access: ModelAccess) -> LimiterService | None:
    """Start the campaign's limiter service when `access` declares limits (once per process)."""
    global _active
    if not access.limits:
        return None
    bind = os.environ.get(LIMITER_BIND_ENV, "127.0.0.1:0")
    host, _, port = bind.rpartition(":")
    with _active_lock:
        if _active is None:
            _active = LimiterService.start({str(k): v for k, v in access.limits.items()}, secrets.token_hex(24), host=host.strip("[]"),
                                           port=int(port or 0))
        return _active


def stop_campaign_limiter() -> None:
    """Stop the campaign's limiter service, if this process runs one."""
    global _active
    with _active_lock:
        if _active is not None:
            _active.stop()
            _active = None


def campaign_limiter() -> tuple[str, str] | None:
    """(url, token) of the campaign's limiter: this process's service, else the one a Ray job
    was given in its environment; None when there is none."""
    with _active_lock:
        if _active is not None:
            return _active.url, _active.token
    url, token = os.environ.get(LIMITER_URL_ENV), os.environ.get(LIMITER_TOKEN_ENV)
    return (url, token) if url and token else None


def attempt_cost(folder: Path) -> float:
    """The gateway's cost figure in an attempt folder's result.json (0 when none)."""
    try:
        doc = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0
    usage = doc.get("usage") if isinstance(doc, dict) else None
    cost = usage.get("cost_usd") if isinstance(usage, dict) else None
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0


@dataclass
class CostBudget:
    """The campaign-wide cost budget, as the scheduler consults it before each attempt."""

    max_cost_usd: float
    per_attempt_cap_usd: float | None = None
    spent_usd: float = 0.0
    finished_max_usd: float = 0.0
    in_flight: dict[str, float] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, access: ModelAccess | None) -> CostBudget | None:
        """The budget `access` declares (None: no campaign budget)."""
        if access is None or access.campaign_max_cost_usd is None:
            return None
        return cls(access.campaign_max_cost_usd, access.budget.max_cost_usd)

    def estimate(self) -> float:
        """What one attempt may spend: the per-attempt cap, else the largest finished attempt's cost."""
        return self.per_attempt_cap_usd if self.per_attempt_cap_usd is not None else self.finished_max_usd

    def admit(self, attempt_id: str) -> bool:
        """Reserve the attempt's estimate if the budget allows it; False: do not start it."""
        with self._lock:
            need = self.spent_usd + sum(self.in_flight.values()) + self.estimate()
            if need > self.max_cost_usd + 1e-9:
                self.refused.append(attempt_id)
                return False
            self.in_flight[attempt_id] = self.estimate()
            return True

    def finished(self, attempt_id: str, cost_usd: float) -> None:
        """An attempt (started in this run or earlier) spent `cost_usd`."""
        with self._lock:
            self.in_flight.pop(attempt_id, None)
            self.spent_usd = round(self.spent_usd + cost_usd, 8)
            self.finished_max_usd = max(self.finished_max_usd, cost_usd)

    def note(self) -> dict[str, Any]:
        """What `cost_budget.json` holds (and the summary and report show)."""
        with self._lock:
            basis = ("budget.max_cost_usd per attempt" if self.per_attempt_cap_usd is not None
                     else "the largest cost of a finished attempt (an estimate: no per-attempt cap is declared)")
            return {"max_cost_usd": self.max_cost_usd, "spent_usd": round(self.spent_usd, 6),
                    "attempt_estimate_usd": round(self.estimate(), 6), "estimate_basis": basis,
                    "stopped": bool(self.refused), "not_started": len(self.refused),
                    "reason": (f"the campaign cost budget of ${self.max_cost_usd:g} would be exceeded: "
                               f"${self.spent_usd:.4f} spent, each attempt counted at ${self.estimate():.4f}; "
                               f"{len(self.refused)} attempt(s) not started (not run, not scored)")
                    if self.refused else None}

    def write(self, root: Path) -> None:
        """Write `cost_budget.json` into the label's folder."""
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / (COST_BUDGET_FILE + ".tmp")
        tmp.write_text(json.dumps(self.note(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(root / COST_BUDGET_FILE)


def read_cost_budget(root: Path) -> dict[str, Any] | None:
    """The label's `cost_budget.json`, or None."""
    try:
        doc = json.loads((root / COST_BUDGET_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
