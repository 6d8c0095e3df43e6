"""The MCP server as a sandbox service (issue 17): `python -m erp_mcp serve` beside the ERP, for
cells that declare the `mcp` interface.

It runs from the ERP image as its own service, on the attempt network only (the agent reaches
it as `http://erp-mcp:8091/mcp`, an alias there), and calls the ERP's agent API. It holds no
token: each MCP request carries the agent's own (`Authorization: Bearer`, from the MCP config
the harness writes into the turn's fresh home), and the server forwards it, so every tool call
is an ordinary agent request with its audit row. It never reaches the control network.

`turn_env` is what a turn of an `mcp` cell gets beside ERP_URL and ERP_TOKEN: `ERP_MCP_URL`.
The harnesses turn it into their own MCP configuration (agent_sandbox/mcp_config.py); a
scripted policy of an mcp cell sends every call through it (agent_sandbox/mcp_client.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.backends.services import Listener, ServiceEndpoints, ServiceSpec
from orchestrator.cells import MCP as MCP_INTERFACE
from orchestrator.config import RuntimeConfig
from orchestrator.errors import Phase, ServiceUnhealthy
from orchestrator.services.erp import ERP

MCP = "mcp"  # the service name (container suffix, pb.role label, logs/mcp.log)
MCP_HOST = "erp-mcp"  # the name the agent uses (an alias on the attempt network)
MCP_LISTENER = "mcp"  # also the key of the server's ready line
MCP_PORT = 8091
MCP_PATH = "/mcp"
# Host offset of its address in the attempt subnet (erp 2, gateway 3, fake provider 4; 5 is left to the web UI).
MCP_ADDRESS_OFFSET = 6
ENV_MCP_URL = "ERP_MCP_URL"


@dataclass(frozen=True)
class McpEndpoints:
    """Where the MCP server listens, and the URL the agent is given."""

    url: str  # http://<its address>:<port> (docker: on the attempt network; local: loopback)
    agent_url: str  # the streamable HTTP endpoint the agent's MCP client opens

    @classmethod
    def of(cls, endpoints: ServiceEndpoints, *, local: bool = False) -> McpEndpoints:
        """In containers the agent uses the fixed name; a local agent (a host process) the
        server's loopback address."""
        url = endpoints.url(MCP_LISTENER)
        base = url if local else f"http://{MCP_HOST}:{MCP_PORT}"
        return cls(url=url, agent_url=base + MCP_PATH)

    def turn_env(self) -> dict[str, str]:
        """The environment a turn of an mcp cell gets (beside ERP_URL and ERP_TOKEN)."""
        return {ENV_MCP_URL: self.agent_url}


def mcp_service(erp_agent_url: str, config: RuntimeConfig, *, image: str | None = None) -> ServiceSpec:
    """The declaration of the MCP server of one attempt, in front of the ERP's agent API.
    `image`: the ERP image's ref (docker); None for a backend that runs no images."""
    return ServiceSpec(
        name=MCP,
        command=("{python}", "-m", "erp_mcp", "serve", "--erp-url", erp_agent_url, "--bind", "{bind:mcp}",
                 "--wait-s", f"{config.erp_ready_timeout_s:g}"),
        image=image,  # the ERP image's (it holds erp_mcp and its wheels)
        listeners=(Listener(MCP_LISTENER, "attempt", MCP_PORT),),
        env={"PYTHONUNBUFFERED": "1"},
        ready_line=True,  # printed once it has read the document and listens
        ready_timeout_s=config.erp_ready_timeout_s,
        # No health check from the host: its only listener is on the attempt network, which the
        # host has no address on. The ready line says it serves; `check_service` that it runs.
        health=None,
        user=config.erp_user,
        limits=config.erp_limits,
        address_offset=MCP_ADDRESS_OFFSET,
        aliases=(MCP_HOST,),
        stop_timeout_s=config.stop_timeout_s,
    )


def open_mcp(run: Any) -> McpEndpoints | None:
    """Start the MCP server of an attempt (an `AttemptRun` whose ERP is up) when its cell
    declares the `mcp` interface; None otherwise."""
    if run.spec.cell.interface != MCP_INTERFACE:
        return None
    docker = getattr(run.backend, "isolation", "") == "docker"
    image = run.backend.service_image(ERP) if docker else None  # no image role of its own: the ERP's
    endpoints = run.sandbox.start_service(mcp_service(run.erp.agent_url, run.config, image=image))
    if docker:  # the local backend read the ready line already; in a container it is in the log
        wait_ready(run.sandbox, run.paths.service_log(MCP), timeout_s=run.config.erp_ready_timeout_s)
    return McpEndpoints.of(endpoints, local=not docker)


def wait_ready(sandbox: Any, log: Path, *, timeout_s: float) -> None:
    """Wait until the server's log (the container's output, followed into `log`) holds its
    ready line: it has read the document and listens. The host cannot probe it (it has no
    address on the attempt network). Raises `ServiceUnhealthy` if it exits or times out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if any('"event": "ready"' in line for line in log.read_text(errors="replace").splitlines()):
                return
        except OSError:
            pass
        if not sandbox.service_running(MCP):
            raise ServiceUnhealthy(f"service {MCP!r} exited before its ready line", phase=Phase.SERVICES,
                                   post_mortems=sandbox.post_mortems())
        if time.monotonic() > deadline:
            raise ServiceUnhealthy(f"service {MCP!r} printed no ready line in {timeout_s:g} s", phase=Phase.SERVICES,
                                   post_mortems=sandbox.post_mortems())
        time.sleep(0.25)
