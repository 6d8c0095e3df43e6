"""Labels on every engine object of an attempt, and whether the object's owner is still alive.

Every container, network and volume the runtime creates carries:

    pb.managed       "1"
    pb.campaign      campaign label (RuntimeConfig.campaign / --label)
    pb.attempt       the attempt id
    pb.role          erp | agent | helper | attempt-net | control-net | workspace | erp-data | turn
    pb.owner.pid     pid of the orchestrator process that created it
    pb.owner.start   that process's start time (clock ticks since boot, /proc/<pid>/stat field 22)
    pb.owner.boot    the host's boot id (/proc/sys/kernel/random/boot_id)
    pb.owner.host    the host name

A pid alone is not proof of life (pids are reused, and a reboot restarts the count), so the
reaper calls an owner alive only when the boot id matches this boot and a process with that pid
exists with the same start time.
"""
from __future__ import annotations

import enum
import hashlib
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache


def object_prefix(run_id: str) -> str:
    """The name prefix of an attempt's engine objects: `pb-` and 16 hex digits of the run id's hash.

    Names, unlike labels, reach the agent: the engine's DNS answers a reverse lookup of an address
    with `<container>.<network>`. The run id holds the seed (which a sealed study keeps secret
    until its reveal) and its random tail makes the hash unguessable, so the names say nothing
    of the attempt; the `pb.attempt` label keeps the run id for the reaper and for people."""
    return "pb-" + hashlib.sha256(run_id.encode()).hexdigest()[:16]


MANAGED = "pb.managed"
CAMPAIGN = "pb.campaign"
ATTEMPT = "pb.attempt"
ROLE = "pb.role"
OWNER_PID = "pb.owner.pid"
OWNER_START = "pb.owner.start"
OWNER_BOOT = "pb.owner.boot"
OWNER_HOST = "pb.owner.host"


@lru_cache(maxsize=1)
def boot_id() -> str:
    """This host's boot id (changes at every reboot)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return "unknown"


def process_start_time(pid: int) -> str | None:
    """Start time of process `pid` in clock ticks since boot, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may contain spaces: split after it.
    rest = stat.rsplit(")", 1)[-1].split()
    # rest[0] is field 3 (state); field 22 (starttime) is rest[19].
    return rest[19] if len(rest) > 19 else None


@dataclass(frozen=True)
class Owner:
    """The process that owns engine objects."""

    pid: int
    start: str
    boot: str
    host: str

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(pid=pid, start=process_start_time(pid) or "unknown", boot=boot_id(), host=socket.gethostname())

    def labels(self) -> dict[str, str]:
        return {OWNER_PID: str(self.pid), OWNER_START: self.start, OWNER_BOOT: self.boot, OWNER_HOST: self.host}


def attempt_labels(campaign: str, attempt_id: str, role: str, owner: Owner | None = None) -> dict[str, str]:
    """The full label set of one object of an attempt."""
    owner = owner or Owner.current()
    return {MANAGED: "1", CAMPAIGN: campaign, ATTEMPT: attempt_id, ROLE: role, **owner.labels()}


class OwnerState(str, enum.Enum):
    """What the reaper knows about an object's owner."""

    ALIVE = "alive"
    DEAD = "dead"  # provably gone: other boot of this host, or no such process / other start time
    UNKNOWN = "unknown"  # another host, or labels missing: cannot be checked from here


def owner_state(labels: Mapping[str, str] | None) -> OwnerState:
    """Decide from an object's labels whether its owner process still runs."""
    labels = labels or {}
    host, boot = labels.get(OWNER_HOST), labels.get(OWNER_BOOT)
    pid_text, start = labels.get(OWNER_PID), labels.get(OWNER_START)
    if not (host and boot and pid_text and start) or not pid_text.isdigit():
        return OwnerState.UNKNOWN
    if host != socket.gethostname():
        return OwnerState.UNKNOWN
    if boot != boot_id():
        return OwnerState.DEAD  # this host rebooted since: every process of that boot is gone
    current_start = process_start_time(int(pid_text))
    if current_start is None or current_start != start:
        return OwnerState.DEAD
    return OwnerState.ALIVE
