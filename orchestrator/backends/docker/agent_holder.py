"""The agent side's one idle container: it holds the attempt's network namespace (its default
route deleted by itself before any agent code runs) and keeps the agent's quota volumes mounted
(the workspace, and each declared turn's folder) for the whole attempt.

Until session 11 these were four containers: a netns holder, a one-shot NET_ADMIN container that
deleted the holder's default route, a workspace keeper and a keeper per turn. Each start costs
this engine a runc start, a FUSE daemon and a page cache of its own, and none of them ever runs
agent code, so they are one now:

- it starts as root with NET_ADMIN (to delete its routes) and SETUID/SETGID/SETPCAP (to drop
  them): the script deletes the default routes, prints those left, and `setpriv` then becomes
  the agent's uid with no capability at all, in any set, bounding set included; under
  `no-new-privileges` nothing can give one back. Only then does it print the ready line, so the
  line proves the drop happened. Every step `exec`s the next and there is no docker-init, so the
  one process left (`sleep`, its pid 1) is the unprivileged one: no root process with a
  capability stays in the namespace the agent joins;
- the agent's turn containers join its network namespace (`network_mode=container:<holder>`),
  never its pid, mount or user namespace: no agent process can see, signal or enter it;
- a tmpfs quota volume lives only while mounted (volume_quota.py): mounted here, the files
  copied in before a turn, written by the turn and copied out after it meet one filesystem, and
  archives go in and out of the workspace through this container.

A turn whose number was not declared at open (a caller that did not know its turns) still gets
a quota volume with a keeper of its own (turns.py), as before.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import docker
import requests.exceptions

from orchestrator.backends.docker.containers import NO_IPV6, start_container
from orchestrator.backends.docker.volume_quota import KEEPER_MEMORY_BYTES
from orchestrator.errors import ContainerStartError, InfraError, Phase

READY_LINE = "pb-agent-holder-ready"
# Runs as root in the holder; prints the default routes left (none), then drops every privilege.
HOLDER_SCRIPT = (
    "ip -4 route del default 2>/dev/null; ip -6 route del default 2>/dev/null; "
    "ip -4 route show default; ip -6 route show default; "
    "exec setpriv --reuid={uid} --regid={gid} --clear-groups --inh-caps=-all --bounding-set=-all "
    "sh -c 'echo {ready}; exec sleep infinity'"
)
HOLDER_CAPS = ["NET_ADMIN", "SETUID", "SETGID", "SETPCAP"]  # dropped by the script before it is ready


def turn_mount(n: int) -> str:
    """Where the holder mounts turn `n`'s volume (the turn's own container mounts it at /turn)."""
    return f"/turns/{n}"


def start_agent_holder(client: Any, image: str | None, *, name: str, labels: dict[str, str], network: str,
                       dns: str, user: str, volumes: Mapping[str, str],
                       containers: dict[str, Any]) -> Any:
    """Create and start the holder (`containers["netns"]`) on `network`, with each volume of
    `volumes` (name -> mount path) mounted; return once it printed its ready line.

    Raises `ContainerStartError` when the engine refuses it, and `InfraError` when it exited
    before being ready or a default route is left (phase: open)."""
    uid, _, gid = user.partition(":")
    script = HOLDER_SCRIPT.format(uid=int(uid), gid=int(gid or uid), ready=READY_LINE)
    try:
        holder = client.containers.create(
            image, entrypoint=["sh", "-c", script], command=[], name=name, labels=labels,
            network=network,
            # The host's bridge has an IPv6 link-local address (inhibit_ipv4 is IPv4 only):
            # IPv6 stays off in the namespace, explicitly rather than by engine default.
            sysctls=NO_IPV6,
            # The engine's embedded DNS forwards unknown names to the host's resolvers; from
            # a host whose resolver is on loopback that would happen outside this namespace
            # and answer public names. Point the upstream at the attempt subnet's unheld
            # gateway slot instead (`dns`): queries stay on the internal bridge, unanswered.
            dns=[dns],
            volumes={vol: {"bind": target, "mode": "rw"} for vol, target in volumes.items()},
            user="0:0", read_only=True, cap_drop=["ALL"], cap_add=HOLDER_CAPS,
            security_opt=["no-new-privileges:true"],
            # No docker-init: it would stay pid 1 as root with the capabilities above.
            mem_limit=KEEPER_MEMORY_BYTES, memswap_limit=KEEPER_MEMORY_BYTES, pids_limit=8, init=False)
        containers["netns"] = holder
        start_container(holder)
        left, ready = _read_until_ready(holder)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ContainerStartError(f"attempt network namespace: {exc}", phase=Phase.OPEN) from exc
    if not ready or left:
        raise InfraError(f"the agent side's holder did not remove its default routes and drop its privileges "
                         f"(ready line seen: {ready}): {left!r}", phase=Phase.OPEN)
    return holder


def _read_until_ready(holder: Any) -> tuple[str, bool]:
    """The holder's output before its ready line, and whether the line came (the stream ends
    when the container exits; the engine client's timeout bounds each read)."""
    seen = b""
    stream = holder.logs(stream=True, follow=True, stdout=True, stderr=True)
    try:
        for chunk in stream:
            seen += chunk
            lines = seen.decode(errors="replace").splitlines()
            if READY_LINE in lines:
                return "\n".join(lines[:lines.index(READY_LINE)]).strip(), True
            if len(seen) > 65536:
                break
    finally:
        close: Callable[[], object] | None = getattr(stream, "close", None)
        if close is not None:
            close()
    return seen.decode(errors="replace").strip(), False
