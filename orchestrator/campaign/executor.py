"""Where a campaign's attempts run: the executor interface (one module per backend beside it).

The scheduler on the head stays the single source of truth: it alone decides what runs, sets
failed tries aside, retries infra errors, writes the ledger and resumes a label. An executor only
runs one attempt into its folder on the head and returns the attempt's result (result.json):

- `local` (executor_local.py, the default): the attempt runs in this process's worker thread,
  on this host's backend.
- `ray` (executor_ray.py): the attempt runs as a Ray task on a node of a cluster that advertises a
  Docker slot; its folder comes back whole and is unpacked here.

This module holds the interface only (no imports of the scheduler), so the scheduler can depend
on it without a cycle.
"""
from __future__ import annotations

import abc
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.identity import AttemptIdentity

# Told once per try where the attempt runs (a node's name), as soon as the executor knows it.
Placed = Callable[[str], None]


class Executor(abc.ABC):
    """Runs one attempt of a campaign into `folder` (on the head) and returns its result."""

    name: str = "executor"

    def prepare(self) -> None:  # noqa: B027 — optional hook: the local executor needs nothing
        """Once, on the head, before the first attempt (connect, check the cluster, ship inputs)."""

    @abc.abstractmethod
    def run(self, ident: AttemptIdentity, folder: Path, cancel: threading.Event, placed: Placed) -> dict[str, Any]:
        """Run one try of `ident`; on return `folder` holds the attempt's record (result.json).

        Raises when the try ended without a record; the scheduler then writes an infra error for
        it (and retries it if it may). `cancel` set: stop the attempt at the next boundary.
        """

    def describe(self) -> dict[str, Any]:
        """What the campaign log says about the executor."""
        return {"executor": self.name}

    def close(self) -> None:  # noqa: B027 — optional hook
        """After the last attempt (disconnect); idempotent."""
