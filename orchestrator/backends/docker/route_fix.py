"""Change a service container's routes from outside it: a one-shot NET_ADMIN container that
joins the service's network namespace, runs a short `ip route` script and prints the table left.

The service itself keeps no capability (an agent-facing process must never be able to change
its own routes); only this container, which runs our script and exits, holds NET_ADMIN.
"""
from __future__ import annotations

from typing import Any


def run_route_script(sandbox: Any, container: Any, script: str, role: str) -> tuple[int | None, list[str]]:
    """Run `script` in `container`'s network namespace; return its exit status and output lines.

    `sandbox` is the docker sandbox (its client, labels, prefix and agent image); `role` names
    the one-shot container (`<prefix>-<role>`). The container is removed whatever happens.
    Raises docker's errors (the caller's phase turns them into its typed failure)."""
    fix = sandbox.client.containers.create(
        sandbox.backend.agent_image, entrypoint=["sh", "-c", script], command=[], user="0:0",
        network_mode=f"container:{container.id}", cap_drop=["ALL"], cap_add=["NET_ADMIN"],
        security_opt=["no-new-privileges:true"], read_only=True,
        labels=sandbox.labels(role), name=f"{sandbox.prefix}-{role}")
    try:
        fix.start()
        status = fix.wait(timeout=60)
        table = fix.logs(stdout=True, stderr=True).decode(errors="replace").strip().splitlines()
    finally:
        fix.remove(force=True)
    return status.get("StatusCode"), table
