"""Stream audit events and fault records to the attempt folder while the attempt runs.

A background thread polls `GET /control/audit?after=ID` and `GET /control/faults?after=SEQ`
and appends new items as JSON lines to `audit.jsonl` / `faults.jsonl` on the host (never
anywhere the agent can read): every `interval_s` while items arrive, backing off to `idle_max_s`
while a pull finds nothing (poll_backoff.py). Container logs are followed by the backend itself
(`logs/erp.log`). `drain()` does a last complete pull, after the final flush.

Streaming is best effort while the attempt runs (a failed poll is retried at the next tick and
counted); the final `drain()` must succeed, or the attempt is an infra error, because the grader
reads these files.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

from orchestrator.attempt.control_client import ControlClient
from orchestrator.errors import Phase
from orchestrator.logs import get_logger
from orchestrator.poll_backoff import PollBackoff

log = get_logger(__name__)


class ControlStreamer:
    """Tails /control/audit and /control/faults into JSON-lines files."""

    def __init__(self, control: ControlClient, audit_path: Path, faults_path: Path, *, interval_s: float = 0.5,
                 idle_max_s: float = 5.0):
        self.control = control
        self.audit_path = audit_path
        self.faults_path = faults_path
        self.backoff = PollBackoff(interval_s, idle_max_s)
        self.polls = 0
        self.audit_last = 0
        self.faults_last = 0
        self.poll_errors = 0
        self.audit_count = 0
        self.faults_count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        audit_path.touch()
        faults_path.touch()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="control-streamer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # A failed poll is retried at the next tick; drain() is strict.
        self.backoff.run(self._stop, lambda: self.pull(phase=Phase.TURN), failed=(Exception,), on_failure=self._failed)

    def _failed(self, exc: Exception) -> None:
        self.poll_errors += 1
        log.debug("stream_poll_failed", error=str(exc))

    def pull(self, *, phase: Phase) -> int:
        """Fetch everything new once (audit pages until exhausted, then faults); returns how
        many items were new."""
        with self._lock:
            self.polls += 1
            before = self.audit_count + self.faults_count
            while True:
                page = self.control.audit(self.audit_last, 1000, phase=phase)
                items = page.get("items") or []
                if items:
                    with open(self.audit_path, "a", encoding="utf-8") as fh:
                        for item in items:
                            fh.write(json.dumps(item, sort_keys=True, separators=(",", ":")) + "\n")
                    self.audit_count += len(items)
                last = int(page.get("last_id") or (items[-1]["id"] if items else self.audit_last))
                if not items or last <= self.audit_last:
                    self.audit_last = max(self.audit_last, last)
                    break
                self.audit_last = last
            faults = self.control.faults(self.faults_last, phase=phase).get("items") or []
            if faults:
                with open(self.faults_path, "a", encoding="utf-8") as fh:
                    for item in faults:
                        fh.write(json.dumps(item, sort_keys=True, separators=(",", ":")) + "\n")
                self.faults_count += len(faults)
                self.faults_last = max(int(f.get("seq", 0)) for f in faults)
            return self.audit_count + self.faults_count - before

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def drain(self) -> None:
        """Stop polling and pull the rest; raises `ErpUnhealthy` if the ERP does not answer."""
        self.stop()
        self.pull(phase=Phase.FREEZE)
