"""The one interface between the attempt lifecycle and the place attempts run.

`Backend.open_attempt()` gives a `Sandbox`: the private world of one attempt (its networks,
volumes, ERP, turn runner). The lifecycle in `orchestrator.attempt` calls only these methods,
in this order:

    open_attempt → start_erp → seed_workspace → run_turn × n → erp_alive (after each turn)
    → stop_erp → copy_workspace → close (always, also after any failure)

Everything HTTP (clock, flush, snapshot, audit) goes through the control URL that `start_erp`
returns, so a backend only moves files and runs processes. A distributed backend implements
these two classes and nothing in the lifecycle changes.
"""
from __future__ import annotations

import abc
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.errors import PostMortem
from orchestrator.paths import AttemptPaths

_PREPARE_LOCK = threading.Lock()


@dataclass(frozen=True)
class AttemptContext:
    """Identity and host folder of the attempt a sandbox belongs to."""

    attempt_id: str
    campaign: str
    paths: AttemptPaths


@dataclass(frozen=True)
class ErpLaunch:
    """What the ERP needs. Host paths; the backend copies them where only the ERP can read."""

    db: Path
    world: Path
    control_token: str
    faults: str | None = None
    fault_profiles: Path | None = None  # a file the ERP reads with --fault-profiles


@dataclass(frozen=True)
class ErpEndpoints:
    """Where the host reaches the control API, and the ERP_URL the agent gets."""

    control_url: str
    agent_url: str


@dataclass(frozen=True)
class Mount:
    """A read-only host file or folder made visible to the turn (policies.py, system mounts)."""

    source: Path
    target: str


@dataclass(frozen=True)
class TurnLaunch:
    """One agent turn (contracts §8)."""

    n: int
    files: Mapping[str, bytes]  # prompt.txt, system.json, context.json
    env: Mapping[str, str]  # ERP_URL, ERP_TOKEN, TURN_BUDGET_S (+ system env); the backend adds HOME, WORKSPACE
    budget_s: float
    host_turn_dir: Path  # the host copy of the turn dir (files + out/) ends up here
    log_path: Path  # the turn's combined stdout/stderr as the backend saw it
    mounts: tuple[Mount, ...] = ()
    image: str | None = None  # a command system's own image (docker only)


@dataclass
class TurnRun:
    """What happened in one turn."""

    exit_code: int | None
    timed_out: bool
    duration_s: float  # from start to exit (or kill)
    oom_killed: bool = False
    start_overhead_s: float = 0.0  # create + copy-in + start
    cleanup_s: float = 0.0  # copy-out + removal
    detail: dict[str, Any] = field(default_factory=dict)


class Sandbox(abc.ABC):
    """The resources of one attempt. Methods raise `InfraError` subclasses on infrastructure failure."""

    isolation: str  # "docker" | "none"

    @abc.abstractmethod
    def start_erp(self, launch: ErpLaunch) -> ErpEndpoints:
        """Start the ERP, stream its log to `paths.erp_log`, return once the ready line / listeners exist.

        Raises `ContainerStartError` (could not create/start), `ErpUnhealthy` (exited or never
        became ready; with a post-mortem), `EngineError` (daemon call failed).
        The lifecycle then waits for /control/health itself.
        """

    @abc.abstractmethod
    def erp_alive(self) -> bool:
        """True while the ERP process/container runs. Raises `EngineError` if that cannot be known."""

    @abc.abstractmethod
    def erp_post_mortem(self) -> PostMortem | None:
        """Status, exit code, OOM flag and last log lines of the ERP; never raises."""

    @abc.abstractmethod
    def seed_workspace(self, handbook_dir: Path) -> None:
        """Copy `handbook_dir` to `<workspace>/handbook`, owned by the agent. Raises `EngineError`."""

    @abc.abstractmethod
    def run_turn(self, turn: TurnLaunch) -> TurnRun:
        """Run one turn in a fresh agent environment under `turn.budget_s`, then kill what is left.

        Copies the turn dir (with out/) to `turn.host_turn_dir`. Agent failures (non-zero exit,
        timeout, OOM of the agent) are returned in `TurnRun`, never raised. Raises
        `ContainerStartError` / `EngineError` when the turn could not be run at all.
        """

    @abc.abstractmethod
    def stop_erp(self) -> None:
        """Stop the ERP gracefully (SIGTERM, then kill after the configured wait). Raises `EngineError`."""

    @abc.abstractmethod
    def copy_workspace(self, dest: Path) -> None:
        """Copy the workspace to `dest` on the host: regular files and folders only, symlinks and
        special files are listed in `dest/../logs/workspace-skipped.txt` but never followed.
        Raises `EngineError`."""

    def policy_path(self, mount: Mount) -> str:
        """The path under which the turn sees `mount` (container path, or host path for local)."""
        return mount.target

    @abc.abstractmethod
    def close(self) -> list[str]:
        """Remove everything this sandbox created. Idempotent; never raises; returns problems found."""


class Backend(abc.ABC):
    """A place where attempts run."""

    name: str
    isolation: str

    _prepared: bool = False

    def prepare(self) -> None:
        """Once per orchestrator run before the first attempt (e.g. reap dead owners' objects,
        resolve images). Raises `InfraError`."""

    def ensure_prepared(self) -> None:
        """`prepare()` once per backend object (the lifecycle calls this before every attempt)."""
        with _PREPARE_LOCK:
            if not self._prepared:
                self.prepare()
                self._prepared = True

    def describe(self) -> dict[str, Any]:
        """Facts for attempt.json (engine version, image ids)."""
        return {"backend": self.name, "isolation": self.isolation}

    @abc.abstractmethod
    def open_attempt(self, ctx: AttemptContext) -> Sandbox:
        """Create the attempt's private resources (networks, volumes / temp folders).

        Raises `SubnetsExhausted`, `EngineError`. On failure, whatever was created is removed.
        """
