"""Size-limited volumes for what the agent writes: the workspace and each turn's folder.

Measured on this machine's engine (Docker 20.10, local volume driver):

- a volume backed by a loop-mounted filesystem image (`type=ext4,device=IMG,o=loop`) does not
  mount: the local driver passes `loop` to mount(2), which refuses it ("loop: invalid argument");
  a disk-backed quota would need the host's root to attach loop devices itself (a scarce host
  resource, leaked by every crash) — not taken;
- a local volume of `type=tmpfs` with `o=size=N` holds: a writer gets ENOSPC at N bytes, the
  host's disk does not move at all (the pages are memory), it is created in milliseconds and
  removed with the volume, so a crash leaves only labelled objects the reaper already removes.

So quotas are tmpfs volumes. Two consequences, both handled here and in the docker backend:

- a tmpfs lives only while mounted: the engine mounts a volume when a container using it starts
  and unmounts it when the last one stops (content gone). Each quota volume therefore has a
  *keeper*, a minimal idle container that holds it mounted from creation to removal, so files
  copied in before a turn, written by the turn and copied out after it all meet the same
  filesystem;
- the pages count against the memory limit of the container that writes them (an agent that
  fills its workspace uses its own memory limit for it), and against the host's memory while
  the volume exists: several attempts at once hold at most the sum of their quotas.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Not less: runc's own init runs in the container's memory cgroup while it starts, and a
# limit of 16 MiB made starts fail ("cannot start a stopped process") under load.
KEEPER_MEMORY_BYTES = 64 * 2**20


def tmpfs_volume_options(size_bytes: int, *, uid: int, gid: int, mode: str = "0755") -> dict[str, str]:
    """`driver_opts` of a local tmpfs volume of at most `size_bytes`, its root owned by uid:gid."""
    if size_bytes <= 0:
        raise ValueError(f"a volume quota must be positive, got {size_bytes}")
    return {"type": "tmpfs", "device": "tmpfs",
            "o": f"size={int(size_bytes)},uid={uid},gid={gid},mode={mode},nosuid,nodev"}


def start_keeper(client: Any, image: str | None, *, name: str, labels: dict[str, str], volume: str, target: str,
                 user: str, start: Callable[[Any], object], init: bool = False) -> Any:
    """Create and start the idle container that holds `volume` mounted at `target` (see the
    module docstring); no network, no capabilities, a read-only root, little memory. `start`
    starts the created container (the docker backend's, which retries a refused start)."""
    if not image:
        raise ValueError("a keeper needs an image (the agent image is not resolved)")
    keeper = client.containers.create(
        image, entrypoint=["sleep", "infinity"], command=[], name=name, labels=labels,
        network_mode="none", volumes={volume: {"bind": target, "mode": "rw"}}, user=user,
        read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
        mem_limit=KEEPER_MEMORY_BYTES, memswap_limit=KEEPER_MEMORY_BYTES, pids_limit=4, init=init)
    try:
        start(keeper)
    except Exception:
        keeper.remove(force=True)
        raise
    return keeper
