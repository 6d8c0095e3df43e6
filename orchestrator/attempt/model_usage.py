"""The host side of the model gateway: its control API, the usage-log stream, usage per turn.

`GatewayControl` talks to the gateway's control listener (control network only): turn marks,
usage-log pages, revoking the virtual key. `UsageLogStreamer` tails the usage log into the attempt
folder (`gateway.jsonl`) while the attempt runs, like the audit log. `turn_usage` and
`attempt_usage` sum the usage-log rows: these are the figures turns.jsonl and result.json carry
(never what the agent says about itself). `is_outage` decides when a turn's failure is the
provider's, not the agent's.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from orchestrator.logs import get_logger
from orchestrator.poll_backoff import PollBackoff

log = get_logger(__name__)

FORWARDED = ("ok", "upstream_status", "upstream_error")
USAGE_FIELDS = ("requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                "prompt_tokens", "cost_usd")


class GatewayUnavailable(RuntimeError):
    """The gateway's control API did not answer (an infrastructure error of the attempt)."""


class GatewayControl:
    """A client of one gateway's control API."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        # trust_env=False: no host proxy variable may route control traffic anywhere else.
        self._http = httpx.Client(timeout=timeout_s, trust_env=False)

    def _call(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        try:
            resp = self._http.request(method, self.url + path, headers=self._headers, **kw)
            resp.raise_for_status()
            doc = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise GatewayUnavailable(f"gateway control {method} {path}: {type(exc).__name__}: {exc}") from None
        return doc if isinstance(doc, dict) else {}

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/control/health")

    def mark_turn(self, turn: int) -> None:
        """UsageLog rows from now on belong to `turn`."""
        self._call("POST", "/control/turn", json={"turn": turn})

    def usage_log(self, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        items = self._call("GET", "/control/usage-log", params={"after": after, "limit": limit}).get("items")
        return list(items or [])

    def provider_wait(self, turn: int) -> float:
        """Seconds turn `turn` waited for the provider's capacity (model_gateway.wait_clock)."""
        value = self._call("GET", "/control/provider-wait", params={"turn": turn}).get("provider_wait_s")
        return float(value) if isinstance(value, (int, float)) else 0.0

    def revoke(self) -> None:
        """The virtual key stops working (the attempt's agent work is over)."""
        self._call("POST", "/control/revoke")

    def close(self) -> None:
        self._http.close()


class UsageLogStreamer:
    """Tails `/control/usage-log` into a JSON-lines file on the host; keeps the rows in memory."""

    def __init__(self, control: GatewayControl, path: Path, *, interval_s: float = 0.5, idle_max_s: float = 5.0) -> None:
        self.control = control
        self.path = path
        self.backoff = PollBackoff(interval_s, idle_max_s)
        self.rows: list[dict[str, Any]] = []
        self.poll_errors = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        path.touch()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="usage-log-streamer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # A failed poll is retried at the next tick; drain() is strict.
        self.backoff.run(self._stop, self.pull, failed=(GatewayUnavailable,), on_failure=self._failed)

    def _failed(self, exc: Exception) -> None:
        self.poll_errors += 1
        log.debug("gateway_usage_log_poll_failed", error=str(exc))

    def pull(self) -> int:
        """Fetch every new row once; returns how many were new."""
        with self._lock:
            new = 0
            while True:
                after = self.rows[-1]["seq"] if self.rows else 0
                items = self.control.usage_log(after)
                if not items:
                    return new
                with open(self.path, "a", encoding="utf-8") as fh:
                    for row in items:
                        fh.write(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n")
                self.rows.extend(items)
                new += len(items)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def drain(self) -> list[dict[str, Any]]:
        """Stop polling, pull the rest (raises GatewayUnavailable), return every row."""
        self.stop()
        self.pull()
        return list(self.rows)


def _sum(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: 0 for k in USAGE_FIELDS}
    out["cost_usd"] = 0.0
    unpriced = unmetered = 0
    for row in rows:
        if row.get("status") not in FORWARDED:
            continue
        out["requests"] += 1
        # An answered call whose upstream reported no usage escaped the budget (a local server
        # that never reports it): counted so the record shows it. count_tokens is never billed.
        unmetered += int(row["status"] == "ok" and not row.get("reported") and row.get("endpoint") != "count_tokens")
        for key in USAGE_FIELDS[1:6]:
            out[key] += int(row.get(key) or 0)
        if row.get("cost_usd") is None:
            unpriced += int(bool(row.get("reported")))
        else:
            out["cost_usd"] = round(out["cost_usd"] + float(row["cost_usd"]), 8)
    if unpriced:
        out["unpriced_requests"] = unpriced
    if unmetered:
        out["unmetered_requests"] = unmetered
    return out


def is_outage(rows: list[dict[str, Any]]) -> bool:
    """A provider outage for a turn: it made model calls and every one failed on the provider's
    side (unreachable, broken off, 5xx or 529 overloaded); none succeeded."""
    forwarded = [r for r in rows if r.get("status") in FORWARDED]
    if not forwarded:
        return False
    return all(r["status"] == "upstream_error" or int(r.get("http_status") or 0) >= 500 for r in forwarded)


def turn_usage(rows: Iterable[dict[str, Any]], turn: int) -> dict[str, Any]:
    """The gateway's figures for one turn, with `budget_exhausted` and `provider_outage`."""
    mine = [r for r in rows if r.get("turn") == turn]
    out = _sum(mine)
    out["source"] = "gateway"
    out["budget_exhausted"] = any(r.get("status") == "budget_exhausted" for r in mine)
    out["upstream_errors"] = sum(1 for r in mine if r.get("status") in ("upstream_error", "upstream_status"))
    out["refused"] = sum(1 for r in mine if r.get("status") == "refused")
    out["provider_outage"] = is_outage(mine)
    _waits(out, mine)
    return out


def _waits(out: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """Per-call waits for the provider's capacity, summed (only when there were any)."""
    queued = sum(float(r.get("queued_s") or 0) for r in rows)
    throttled = sum(float(r.get("throttled_s") or 0) for r in rows)
    retries = sum(int(r.get("retries") or 0) for r in rows)
    if queued or throttled or retries:
        out.update(queued_s=round(queued, 3), throttled_s=round(throttled, 3), provider_retries=retries)


def attempt_usage(rows: list[dict[str, Any]], price_version: str | None = None) -> dict[str, Any]:
    """The gateway's figures for the whole attempt."""
    out = _sum(rows)
    out["source"] = "gateway"
    out["budget_exhausted"] = any(r.get("status") == "budget_exhausted" for r in rows)
    versions = sorted({str(r["price_version"]) for r in rows if r.get("price_version")})
    out["price_version"] = price_version or (versions[0] if len(versions) == 1 else None)
    return out
