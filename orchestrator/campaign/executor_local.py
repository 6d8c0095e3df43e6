"""The `local` executor (the default): attempts run in the head's own worker threads.

It wraps the runtime's attempt job (`runtime.make_job`): the attempt runs on this host's
backend (docker or local) and writes its folder in place.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from orchestrator.campaign.executor import Executor, Placed
from orchestrator.campaign.scheduler import AttemptJob
from orchestrator.identity import AttemptIdentity


class LocalExecutor(Executor):
    """Runs each attempt in the calling thread through an `AttemptJob`."""

    name = "local"

    def __init__(self, job: AttemptJob) -> None:
        self.job = job

    def run(self, ident: AttemptIdentity, folder: Path, cancel: threading.Event, placed: Placed) -> dict[str, Any]:
        """Run the attempt here; the job writes `folder` itself."""
        return self.job(ident, folder, cancel)
