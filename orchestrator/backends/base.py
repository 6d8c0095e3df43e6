"""The one interface between the attempt lifecycle and the place attempts run.

`Backend.open_attempt()` gives a `Sandbox`: the private world of one attempt (its networks,
volumes, named services, turns). The attempt runner (`orchestrator.attempt.runner`) calls
only these methods, in this order:

    open_attempt → start_service × k (ERP, later gateway, MCP) → wait_service_healthy
    → seed_workspace → run_turn × n (check_service after each) → stop_service
    → copy_workspace → close (always, also after any failure)

with `prepare_turn` (the first turn's, beside the services' start; each next one through
`TurnLaunch.next_n`, beside the turn before) and the services' stops run beside the copy-out.

Services are declarations (`orchestrator.backends.services.ServiceSpec`): the backend starts,
checks, post-mortems and stops any of them by name with the same methods. Everything HTTP
(clock, flush, snapshot, audit) goes through the URLs `start_service` returns, so a backend only
moves files and runs processes. A distributed backend implements these two classes and nothing
in the lifecycle changes; tests/test_backend_conformance.py states the contract on both.
"""
from __future__ import annotations

import abc
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_sandbox.provider_wait import extended_deadline
from orchestrator.admission import Held, StartSlots
from orchestrator.backends.services import (
    HealthCheck,
    ServiceEndpoints,
    ServiceSpec,
    ServiceSpecError,
    probe_health,
)
from orchestrator.errors import PostMortem, ServiceUnhealthy
from orchestrator.integrity import ServiceDeath
from orchestrator.logs import get_logger
from orchestrator.paths import AttemptPaths

log = get_logger(__name__)
_PREPARE_LOCK = threading.Lock()
_PROGRESS_EVERY_S = 2.0  # how often a health wait samples the service's progress counters
# CPU time that counts as progress: an idle container's creeps by ~30 us a second (its init, the
# kernel's accounting), so a hung start never looked stalled and waited out the whole cap.
_MIN_CPU_PROGRESS_S = 0.005
_ALIVE_EVERY_S = 0.5  # how often it asks whether the service still runs (its probes: every 0.05-0.1 s)


def _fmt(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(values.items()))


@dataclass(frozen=True)
class AttemptContext:
    """Identity and host folder of the attempt a sandbox belongs to."""

    attempt_id: str
    campaign: str
    paths: AttemptPaths
    # The turn numbers the attempt will run, when known at open (docker: their quota volumes are
    # made with the agent side and held by its one idle container; a turn not listed gets a
    # volume and keeper of its own when it comes).
    turns: tuple[int, ...] = ()


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
    # Set by the caller to cut the turn short (a campaign stopping): the backend stops the turn
    # within seconds instead of waiting out its budget (orchestrator/cancel_watch.py).
    cancel: threading.Event | None = None
    # The number of the turn that follows this one in the same sandbox, if any: the backend may
    # make what that turn needs (`Sandbox.prepare_turn`) while this one runs.
    next_n: int | None = None
    # The turn's provider wait so far (the gateway's control API; orchestrator/model_limits.py):
    # the hard deadline is the budget plus it (capped), plus the grace. None: no model gateway.
    provider_wait: Callable[[], float] | None = None

    def wait_until_deadline(self, wait: Callable[[float], object], timeouts: tuple[type[BaseException], ...],
                            started: float, grace_s: float) -> bool:
        """Call `wait(seconds)` until the turn ends or its hard deadline passes (`wait` raises one
        of `timeouts` when its time is up); True when the deadline passed."""
        while True:
            waited = self.provider_wait() if self.provider_wait is not None else 0.0
            left = extended_deadline(started, self.budget_s, waited) + grace_s - time.monotonic()
            if left <= 0:
                return True
            try:
                wait(left)
                return False
            except timeouts:
                if self.provider_wait is None:
                    return True


@dataclass
class TurnRun:
    """What happened in one turn."""

    exit_code: int | None
    timed_out: bool
    duration_s: float  # from start to exit (or kill)
    oom_killed: bool = False
    start_overhead_s: float = 0.0  # create + copy-in + start
    cleanup_s: float = 0.0  # copy-out + removal (docker: the removal runs on, beside the next step)
    detail: dict[str, Any] = field(default_factory=dict)


def _moved(before: dict[str, float] | None, after: dict[str, float]) -> bool:
    """Whether the progress counters moved: a counter grew (CPU seconds by more than
    _MIN_CPU_PROGRESS_S), or one appeared."""
    if before is None:
        return True
    for key, value in after.items():
        old = before.get(key)
        if old is None or value - old > (_MIN_CPU_PROGRESS_S if key.endswith("cpu_s") else 0.0):
            return True
    return False


class _HealthWait:
    """The clock of one health wait: progress samples, the no-progress window, the cap."""

    def __init__(self, sandbox: Sandbox, name: str, check: HealthCheck, error: type[ServiceUnhealthy]) -> None:
        self.sandbox, self.name, self.check, self.error = sandbox, name, check, error
        self.t0 = self.last_progress_at = time.monotonic()
        self.progress = sandbox.service_progress(name)
        self.slice_s = min(_PROGRESS_EVERY_S, check.timeout_s / 4)  # several samples inside a stall window
        self.next_sample = self.t0 + self.slice_s
        self.problem: str | None = "not probed"

    def waited_s(self) -> float:
        return time.monotonic() - self.t0

    def sample_progress(self) -> None:
        """Note whether the service's counters moved since the last sample."""
        now = time.monotonic()
        sample = self.sandbox.service_progress(self.name)
        if sample is not None and _moved(self.progress, sample):
            self.last_progress_at, self.progress = now, sample
        self.next_sample = now + self.slice_s

    def give_up_if_stalled(self, problem: str | None) -> None:
        """Raise the wait's error after `timeout_s` without progress, or at the `max_wait_s` cap."""
        now = time.monotonic()
        stalled_s, waited_s = now - self.last_progress_at, now - self.t0
        if stalled_s >= self.check.timeout_s or waited_s >= self.check.max_wait_s:
            why = (f"no progress for {stalled_s:.0f}s" if stalled_s >= self.check.timeout_s
                   else f"still starting at the {self.check.max_wait_s:g}s cap")
            seen = "progress not observable" if self.progress is None else f"last seen: {_fmt(self.progress)}"
            raise self.error(f"service {self.name!r} not healthy after {waited_s:.0f}s ({why}; {seen}): {problem}",
                             post_mortems=self.sandbox._pm(self.name))


class Sandbox(abc.ABC):
    """The resources of one attempt. Methods raise `InfraError` subclasses on infrastructure failure."""

    isolation: str  # "docker" | "none"

    def __init__(self) -> None:
        self._services: dict[str, tuple[ServiceSpec, ServiceEndpoints]] = {}
        # Host-wide admission of service starts (orchestrator/admission.py), set by the backend;
        # a start holds a slot from `start_service` until `wait_service_healthy` ends.
        self.admission: StartSlots | None = None
        self._admitted: dict[str, Held] = {}
        self.queued_s: dict[str, float] = {}  # service -> seconds its start waited for a slot

    # -- named services ------------------------------------------------------------------------

    def start_service(self, spec: ServiceSpec) -> ServiceEndpoints:
        """Start the declared service and stream its output to `logs/<spec.log_name>.log`.

        Returns once it runs (and, with `ready_line`, once it printed the ready line); it may not
        answer its health check yet (see `wait_service_healthy`). Raises `ContainerStartError`
        (could not create/start), `ServiceUnhealthy` (exited, or no ready line; with a
        post-mortem), `EngineError` (daemon call failed), `ServiceSpecError` (a name used twice).
        """
        if spec.name in self._services:
            raise ServiceSpecError(f"service {spec.name!r} is already started in this sandbox")
        if self.admission is not None and self.start_is_expensive(spec):
            held = self._shared_slot()
            waited_s = 0.0
            if held is None:
                held = self.admission.acquire()  # queueing, not failing: no deadline runs yet
                waited_s = held.waited_s
            log.info("start_admitted", service=spec.name, slot=held.index, queued_s=round(waited_s, 3))
            self.queued_s[spec.name] = waited_s
            self._admitted[spec.name] = held
        try:
            endpoints = self._start_service(spec)
        except BaseException:
            self._release_admission(spec.name)
            raise
        self._services[spec.name] = (spec, endpoints)
        if spec.health is None:
            self._release_admission(spec.name)  # nothing to wait for: the start is over
        return endpoints

    def start_is_expensive(self, spec: ServiceSpec) -> bool:
        """Whether starting `spec` takes a host-wide start slot (docker: not a standby ERP that
        only opens its database, warm_pool.py)."""
        return True

    def _shared_slot(self) -> Held | None:
        """The slot this sandbox already holds, if a start is still before its health wait.

        One sandbox holds at most one slot: a second start while the first still holds its
        slot shares it. Otherwise an attempt starting k services before waiting for any of them
        (the ERP, a fake provider, the gateway) would wait for a slot it holds itself once k
        reached the host's limit — a deadlock on a 2-core machine with 2 slots."""
        return next(iter(self._admitted.values()), None)

    def _release_admission(self, name: str) -> None:
        held = self._admitted.pop(name, None)
        if held is not None and any(other is held for other in self._admitted.values()):
            return  # another start of this sandbox still uses the shared slot
        if held is not None:
            # Logged while still held (and admission after acquiring), so the logged windows of
            # a slot never overlap: tests count them to check the limit.
            log.info("start_released", service=name, slot=held.index)
            held.release()

    def release_admissions(self) -> None:
        """Give back every start slot still held (a start abandoned before its health wait);
        backends call this from `close`."""
        for name in list(self._admitted):
            self._release_admission(name)

    def service_progress(self, name: str) -> dict[str, float] | None:
        """Counters that grow while the service works (CPU seconds, log bytes); None when this
        backend cannot tell. Never raises."""
        return None

    def service_ready(self, name: str) -> threading.Event | None:
        """An event set once the service printed its ready line or its output ended (it exited,
        or the stream broke), for a service that declares `ready_line` and has not yet been found
        healthy; None when the backend has no such signal (its health wait probes until the
        check passes). A backend whose `start_service` already waits for the ready line (local)
        needs none."""
        return None

    @abc.abstractmethod
    def _start_service(self, spec: ServiceSpec) -> ServiceEndpoints:
        """Backend part of `start_service` (the name is new here)."""

    @abc.abstractmethod
    def service_running(self, name: str) -> bool:
        """True while the service's process/container runs (False if never started).
        Raises `EngineError` if that cannot be known."""

    @abc.abstractmethod
    def service_post_mortem(self, name: str) -> PostMortem | None:
        """Status, exit code, OOM flag and last log lines of the service (None if never started);
        never raises."""

    @abc.abstractmethod
    def stop_service(self, name: str) -> None:
        """Stop the service gracefully (SIGTERM, then kill after its `stop_timeout_s`); a service
        that is not running is left alone. Raises `EngineError`."""

    def services(self) -> list[str]:
        """Names of the services started so far, in start order."""
        return list(self._services)

    def endpoints(self, name: str) -> ServiceEndpoints:
        """The URLs `start_service` returned for `name`."""
        return self._services[name][1]

    def check_service(self, name: str, *, error: type[ServiceUnhealthy] = ServiceUnhealthy) -> None:
        """Raise `error` (with a post-mortem) unless the service runs and answers its health check."""
        if name not in self._services:
            raise error(f"service {name!r} was never started")
        spec, endpoints = self._services[name]
        if not self.service_running(name):
            self._raise_dead(name, error)
        if spec.health is not None and (problem := probe_health(endpoints, spec.health)) is not None:
            raise error(f"service {name!r} is unhealthy: {problem}", post_mortems=self._pm(name))

    def wait_service_healthy(self, name: str, *, error: type[ServiceUnhealthy] = ServiceUnhealthy) -> None:
        """Poll the health check until it passes, while the service makes progress.

        Raises `error` at once if the service exits; after `health.timeout_s` without progress
        (`service_progress` unchanged: a hung start); after `health.max_wait_s` in all. A loaded
        host slows a start down but never fails it while it works. Releases the start slot.
        """
        try:
            self._wait_healthy(name, error)
        finally:
            self._release_admission(name)

    def _wait_healthy(self, name: str, error: type[ServiceUnhealthy]) -> None:
        spec, endpoints = self._services[name]
        check = spec.health
        if check is None:
            if not self.service_running(name):
                self._raise_dead(name, error)
            return
        wait = _HealthWait(self, name, check, error)
        ready = self.service_ready(name)
        if ready is not None:
            # The ready line (read from the service's output stream: one long request, no probe
            # loop) or the output's end wakes this up; meanwhile only progress is sampled.
            while not ready.wait(wait.slice_s):
                wait.sample_progress()
                wait.give_up_if_stalled("no ready line yet")
            if not self.service_running(name):
                self._raise_dead(name, error, waited_s=wait.waited_s(), last_problem="its output ended")
            # Ready means listening; healthy means answering. Usually the first probe passes;
            # when it does not (or the stream ended without the line), the probes go on below.
            wait.problem = probe_health(endpoints, check)
            if wait.problem is None:
                return
        next_alive_check = time.monotonic()
        while True:
            now = time.monotonic()
            # Whether it still runs is an engine inspect on docker (CPU of the engine and of this
            # process beside the service's own start): asked every _ALIVE_EVERY_S, not every poll.
            if now >= next_alive_check:
                if not self.service_running(name):
                    self._raise_dead(name, error, waited_s=wait.waited_s(), last_problem=wait.problem)
                next_alive_check = now + _ALIVE_EVERY_S
            wait.problem = probe_health(endpoints, check)
            if wait.problem is None:
                return
            if time.monotonic() >= wait.next_sample:
                wait.sample_progress()
            wait.give_up_if_stalled(wait.problem)
            # Every poll that comes after the service got ready is added to the start: the probes
            # are cheap (one reused client, a refused connect), so they stay frequent.
            time.sleep(0.05 if wait.waited_s() < 2 else 0.1)

    def service_death(self, name: str, *, since: float) -> ServiceDeath | None:
        """How a service that is no longer running ended, from facts the agent cannot write
        (the engine's state and events since the wall time `since`); None when this backend
        cannot tell (then a dead service stays the infrastructure's failure). Never raises."""
        return None

    def post_mortems(self) -> list[PostMortem]:
        """A post-mortem of every started service (for the error record); never raises."""
        return [pm for name in self._services if (pm := self.service_post_mortem(name)) is not None]

    def _pm(self, name: str) -> list[PostMortem]:
        pm = self.service_post_mortem(name)
        return [pm] if pm is not None else []

    def _raise_dead(self, name: str, error: type[ServiceUnhealthy], *, waited_s: float | None = None,
                    last_problem: str | None = None) -> None:
        pms = self._pm(name)
        detail = f" (exit {pms[0].exit_code}, OOM killed: {pms[0].oom_killed})" if pms else ""
        if waited_s is not None:
            detail += f", exited {waited_s:.1f}s into its health wait (last probe: {last_problem})"
        raise error(f"service {name!r} is not running{detail}", post_mortems=pms)

    # -- workspace and turns --------------------------------------------------------------------

    @abc.abstractmethod
    def seed_workspace(self, handbook_dir: Path) -> None:
        """Copy `handbook_dir` to `<workspace>/handbook`, owned by the agent. Raises `EngineError`."""

    def prepare_turn(self, n: int) -> None:  # noqa: B027 — optional hook: only docker makes anything ahead
        """Turn `n` comes next in this sandbox: the backend may start making, in the background,
        what that turn needs and that depends on its number only (docker: its quota volume and
        keeper). `run_turn` waits for it (and raises what making it raised); `close` removes
        what no turn used. Never raises."""

    @abc.abstractmethod
    def run_turn(self, turn: TurnLaunch) -> TurnRun:
        """Run one turn in a fresh agent environment under `turn.budget_s`, then kill what is left.

        Copies the turn dir (with out/) to `turn.host_turn_dir`. Agent failures (non-zero exit,
        timeout, OOM of the agent) are returned in `TurnRun`, never raised. Raises
        `ContainerStartError` / `EngineError` when the turn could not be run at all, and
        `KeeperLost` (docker) when a container holding the turn's files stopped before or during
        it.
        """

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

    def prepare(self) -> None:  # noqa: B027 — optional hook: most backends need no preparation
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

        Raises `InfraError` (e.g. no free subnet left), `EngineError`. On failure, whatever was created is removed.
        """
