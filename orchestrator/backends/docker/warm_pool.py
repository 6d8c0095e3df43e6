"""A small pool of ERP slots made ahead: an attempt's two networks and its ERP container, started
in standby (`python -m erp_service standby`: the server imported, no database, no token, waiting
for its launch file), so that an attempt's most expensive objects are ready when it opens.

What a slot holds is what the attempt would have made itself, from the same image, on the same
topology, with the same limits, user and addresses: fresh networks on fresh subnets and a fresh
container with an empty data volume. A slot is taken by exactly one attempt (popped under a lock)
and becomes that attempt's: its sandbox copies the scenario files in, then the launch file, and
removes everything at its close like its own objects. Nothing of a slot is ever given to a second
attempt, and a slot is never refilled after use: the pool makes a new one instead.

Untaken slots are removed by `WarmPool.close` (the backend's `shutdown`, when its run ends, and
at the process's exit) and, after a crash, by the reaper: every object carries the runtime's
labels with this process as owner (`pb.attempt` is the slot's own id, `pool-<hex>`).

An attempt whose ERP declaration differs from the slot's (another image, user, limits, listeners,
environment or address: `ErpShape`) does not use it: the standby container is removed with the
attempt and the ERP starts cold, as without a pool.
"""
from __future__ import annotations

import atexit
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import docker
import docker.errors
import requests.exceptions

from orchestrator import labels as L
from orchestrator.admission import start_slots
from orchestrator.backends.docker.containers import PYTHON, EventRecorder
from orchestrator.backends.services import ServiceSpec
from orchestrator.logs import get_logger

log = get_logger(__name__)

STANDBY_LINE = b'"event": "standby"'
SERVE_PREFIX = ("{python}", "-m", "erp_service", "serve")


@dataclass(frozen=True)
class ErpShape:
    """What an ERP container is fixed to at creation: a standby made for one shape serves only
    a declaration of the same shape."""

    image: str
    user: str
    limits: Any
    env: tuple[tuple[str, str], ...]
    listeners: tuple[Any, ...]
    networks: tuple[str, ...]
    aliases: tuple[str, ...]
    offset: int

    @classmethod
    def of(cls, spec: ServiceSpec, *, image: str, user: str, limits: Any, offset: int) -> ErpShape | None:
        """The shape of an ERP declaration, or None when it cannot stand by (not `erp_service
        serve`, a published port, no ready line)."""
        if spec.command[:4] != SERVE_PREFIX or not spec.ready_line or any(li.publish for li in spec.listeners):
            return None
        return cls(image=image, user=user, limits=limits, env=tuple(sorted(spec.env.items())),
                   listeners=tuple(spec.listeners), networks=tuple(spec.joined_networks()), aliases=tuple(spec.aliases),
                   offset=offset)


@dataclass
class WarmSlot:
    """An attempt's networks and a standby ERP on them, made ahead (see the module docstring)."""

    slot_id: str
    shape: ErpShape
    networks: dict[str, Any] = field(default_factory=dict)   # role -> network
    blocks: dict[str, Any] = field(default_factory=dict)     # role -> subnet block
    erp: Any = None                                          # the started standby container
    volume: Any = None                                       # its (empty) data volume
    recorder: EventRecorder | None = None                    # its engine events since before its start


# (slot id, shape) -> the slot, made: the backend's part (networks, container options).
SlotMaker = Callable[[str, ErpShape], WarmSlot]
SlotRemover = Callable[[WarmSlot], list[str]]


class WarmPool:
    """Keeps up to `size` slots of one shape ready, made in background threads."""

    def __init__(self, size: int, shape: ErpShape, make: SlotMaker, remove: SlotRemover, *, config: Any) -> None:
        self.size, self.shape = size, shape
        self._make, self._remove, self._config = make, remove, config
        self._ready: list[WarmSlot] = []
        self._making = 0
        self._closed = False
        self._lock = threading.Condition()
        self._threads: list[threading.Thread] = []
        self.taken = 0
        self.missed = 0
        atexit.register(self.close)  # nothing is made before the first `refill`

    def take(self, shape: ErpShape | None) -> WarmSlot | None:
        """A ready slot of `shape` for one attempt, or None (none ready: the attempt makes its
        own). Never waits for a slot being made. The pool is refilled when the attempt calls
        `refill` (once its ERP is up: on a small host a standby's start would slow it down)."""
        with self._lock:
            slot = self._ready.pop(0) if (self._ready and shape == self.shape and not self._closed) else None
            if slot is None:
                self.missed += 1
            else:
                self.taken += 1
        return slot

    def refill(self) -> None:
        """Start making slots up to `size` (in background threads)."""
        self._fill()

    def _fill(self) -> None:
        with self._lock:
            while not self._closed and len(self._ready) + self._making < self.size:
                self._making += 1
                t = threading.Thread(target=self._make_one, name="pb-warm-slot", daemon=True)
                self._threads.append(t)
                t.start()

    def _make_one(self) -> None:
        slot_id = f"pool-{uuid.uuid4().hex[:10]}"
        slot: WarmSlot | None = None
        try:
            # A standby's start is a container start like any other: it takes a host-wide start
            # slot (admission.py), so the pool never starts more at once than the host allows;
            # waiting for one, it gives up when the pool closes.
            slots = start_slots(self._config)
            held = slots.try_acquire()
            while held is None and not self._closed:
                time.sleep(0.2)
                held = slots.try_acquire()
            if held is not None:
                with held:
                    slot = None if self._closed else self._make(slot_id, self.shape)
        except Exception as exc:  # noqa: BLE001 — a slot that could not be made is only a cold start later
            log.warning("warm_slot_failed", slot=slot_id, error=f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._making -= 1
            if slot is not None and not self._closed:
                self._ready.append(slot)
                slot = None
        if slot is not None:  # made after the pool closed
            self._remove(slot)

    def close(self) -> list[str]:
        """Stop making slots; remove every untaken one (and those still being made). Idempotent."""
        with self._lock:
            self._closed = True
            ready, self._ready = self._ready, []
            threads = list(self._threads)
        for t in threads:
            t.join(timeout=120)
        problems = [p for slot in ready for p in self._remove(slot)]
        if problems:
            log.warning("warm_pool_close_problems", problems=problems)
        return problems


def wait_for_standby(container: Any) -> bool:
    """Follow a standby container's output until its standby line; False when it ended first."""
    seen = b""
    stream = container.logs(stream=True, follow=True, stdout=True, stderr=True)
    try:
        for chunk in stream:
            seen += chunk
            if STANDBY_LINE in seen:
                return True
            if len(seen) > 65536:
                return False
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return False


def standby_argv(data: str) -> list[str]:
    """The standby's command line: wait for `<data>/launch.json`."""
    return [PYTHON, "-m", "erp_service", "standby", "--launch", f"{data}/launch.json"]


def pool_labels(campaign: str, slot_id: str, role: str) -> dict[str, str]:
    """The runtime's labels of a slot's objects (the reaper's owner check covers them)."""
    return L.attempt_labels(campaign, slot_id, role, L.Owner.current())


def alive(container: Any) -> bool:
    """Whether a slot's standby still runs (checked when it is taken)."""
    try:
        container.reload()
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return False
    return container.status == "running"

