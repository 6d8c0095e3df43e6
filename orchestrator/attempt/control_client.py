"""The host's client for the ERP control API (contracts §3)."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from orchestrator.errors import ErpUnhealthy, Phase


class ControlClient:
    """Calls /control/* with the control token. Every failure raises `ErpUnhealthy`.

    `trust_env=False`: proxy variables of the host must never route control traffic elsewhere.
    """

    def __init__(self, base_url: str, token: str, *, timeout_s: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout_s,
            trust_env=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, *, phase: Phase, timeout_s: float | None = None, **kw: Any) -> httpx.Response:
        try:
            resp = self._http.request(method, path, timeout=timeout_s or self._http.timeout, **kw)
        except httpx.HTTPError as exc:
            raise ErpUnhealthy(f"{method} {path}: {type(exc).__name__}: {exc}", phase=phase) from exc
        if resp.status_code >= 400:
            raise ErpUnhealthy(f"{method} {path}: HTTP {resp.status_code}: {resp.text[:500]}", phase=phase)
        return resp

    def health(self, *, phase: Phase = Phase.SERVICES, timeout_s: float | None = None) -> dict[str, Any]:
        return self._call("GET", "/control/health", phase=phase, timeout_s=timeout_s).json()

    def wait_healthy(self, deadline_s: float, *, alive: Callable[[], None] | None = None) -> dict[str, Any]:
        """Poll /control/health until it answers 200; `alive()` raises if the ERP died meanwhile."""
        end = time.monotonic() + deadline_s
        last: Exception | None = None
        while time.monotonic() < end:
            if alive is not None:
                alive()
            try:
                return self.health(timeout_s=2.0)
            except ErpUnhealthy as exc:
                last = exc
                time.sleep(0.05)
        raise ErpUnhealthy(f"ERP not healthy after {deadline_s:.0f}s: {last}", phase=Phase.SERVICES)

    def advance(self, to: str, *, phase: Phase, timeout_s: float) -> dict[str, Any]:
        return self._call("POST", "/control/advance", json={"to": to}, phase=phase, timeout_s=timeout_s).json()

    def flush(self, *, phase: Phase = Phase.FREEZE) -> None:
        self._call("POST", "/control/flush", phase=phase)

    def audit(self, after: int, limit: int = 1000, *, phase: Phase = Phase.TURN) -> dict[str, Any]:
        return self._call("GET", "/control/audit", params={"after": after, "limit": limit}, phase=phase).json()

    def faults(self, after: int, *, phase: Phase = Phase.TURN) -> dict[str, Any]:
        return self._call("GET", "/control/faults", params={"after": after}, phase=phase).json()

    def snapshot(self, dest: Path, *, timeout_s: float, phase: Phase = Phase.FREEZE) -> int:
        """Stream the consistent database copy into `dest`; return its size in bytes."""
        tmp = dest.with_suffix(dest.suffix + ".part")
        try:
            with self._http.stream("GET", "/control/snapshot", timeout=timeout_s) as resp:
                if resp.status_code != 200:
                    raise ErpUnhealthy(f"GET /control/snapshot: HTTP {resp.status_code}", phase=phase)
                size = 0
                with open(tmp, "wb") as fh:
                    for chunk in resp.iter_bytes(1 << 16):
                        fh.write(chunk)
                        size += len(chunk)
        except httpx.HTTPError as exc:
            raise ErpUnhealthy(f"GET /control/snapshot: {type(exc).__name__}: {exc}", phase=phase) from exc
        tmp.replace(dest)
        return size
