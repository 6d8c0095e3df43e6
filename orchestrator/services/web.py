"""The web UI as a sandbox service: `python -m erp_web serve` in front of the ERP's agent API.

It runs from the ERP image (the image holds erp_web; its wheels are in images/erp/requirements.txt)
as its own service. It holds the signed-in user's token (the agent user's: a person in human mode
works as that user), the secret of the sign-in link and the host's token for its turn endpoints,
all as private files. It calls the agent API only, never the control API: every click is an
audited agent request.

Its one listener is the person's way in, published on host loopback only (127.0.0.1, an
ephemeral port or `RuntimeConfig.web_port`):

- docker: the container joins the attempt network (no listener there: it calls the ERP's agent
  API by the ERP container's name, which the engine's DNS answers) and the `web` network of
  networks/topology.yaml, where it listens. The engine publishes ports only for a container on a
  network that is not internal, so `web` is not; its bridge is host-firewalled (new connections
  from it to the host are dropped) and the UI's default route is deleted right after it starts
  (`drop_default_route`): it reaches its two subnets and nothing beyond. It never joins the
  control network, and nothing else of the attempt is published.
- local: a host process bound to 127.0.0.1 (`isolation: none`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from orchestrator.backends.docker.route_fix import run_route_script
from orchestrator.backends.services import HealthCheck, Listener, NetworkRole, ServiceEndpoints, ServiceFile, ServiceSpec
from orchestrator.config import RuntimeConfig
from orchestrator.errors import Phase, ServiceUnhealthy
from orchestrator.services.erp import ERP

WEB = "web"  # the service name (container suffix, pb.role label, logs/web.log)
WEB_UI = "web"  # the listener's name, also the key of the ready line
WEB_NET = "web"  # its network in networks/topology.yaml (docker)
WEB_PORT = 8090  # inside the container
LOOPBACK = "127.0.0.1"  # the only host address it is ever published on
# Host offset of its address in each subnet (erp 2, gateway 3, fake provider 4, mcp 6).
WEB_ADDRESS_OFFSET = 5


class WebUnhealthy(ServiceUnhealthy):
    """The web UI did not start or stopped answering."""


@dataclass(frozen=True)
class WebLaunch:
    """What the web UI needs: where the agent API is, whose token, and the handbook to show."""

    agent_url: str
    user_token: str = field(repr=False)
    login_key: str = field(repr=False)
    host_token: str = field(repr=False)
    handbook_dir: Path | None = None
    human: bool = True  # the UI is usable only while a turn is open


@dataclass(frozen=True)
class WebEndpoints:
    """The UI's base URL on host loopback and the sign-in link a person opens."""

    url: str
    login_key: str = field(repr=False)

    @property
    def login_url(self) -> str:
        return f"{self.url}/login?key={self.login_key}"

    @classmethod
    def of(cls, endpoints: ServiceEndpoints, login_key: str) -> WebEndpoints:
        return cls(endpoints.url(WEB_UI), login_key)


def web_service(launch: WebLaunch, config: RuntimeConfig, *, image: str | None = None) -> ServiceSpec:
    """The declaration of the web UI service of one attempt. `image`: the ERP image's ref
    (docker); None for a backend that runs no images."""
    files = [
        ServiceFile("user.token", launch.user_token.encode(), 0o400),
        ServiceFile("login.key", launch.login_key.encode(), 0o400),
        ServiceFile("host.token", launch.host_token.encode(), 0o400),
    ]
    command = [
        "{python}", "-m", "erp_web", "serve", "--api", launch.agent_url, "--bind", "{bind:web}",
        "--token-file", "{data}/user.token", "--login-key-file", "{data}/login.key", "--host-token-file", "{data}/host.token",
    ]  # fmt: skip
    if launch.handbook_dir is not None:
        for md in sorted(launch.handbook_dir.glob("*.md")):
            files.append(ServiceFile(f"handbook/{md.name}", md.read_bytes(), 0o400))
        command += ["--handbook", "{data}/handbook"]
    if launch.human:
        command.append("--human")
    return ServiceSpec(
        name=WEB,
        command=tuple(command),
        image=image,  # the ERP image's (it holds erp_web and its wheels)
        listeners=(Listener(WEB_UI, cast(NetworkRole, WEB_NET), WEB_PORT, publish=LOOPBACK, publish_port=config.web_port),),
        networks=("attempt",),  # to call the agent API; it listens on `web` only
        files=tuple(files),
        env={"PYTHONUNBUFFERED": "1"},
        ready_line=True,
        ready_timeout_s=config.erp_ready_timeout_s,
        # From the host, through the published port: the check proves the person's way in works.
        health=HealthCheck(WEB_UI, "/healthz", timeout_s=config.erp_ready_timeout_s),
        user=config.erp_user,
        limits=config.erp_limits,
        address_offset=WEB_ADDRESS_OFFSET,
        stop_timeout_s=config.stop_timeout_s,
    )


def start_web(run: Any, launch: WebLaunch) -> WebEndpoints:
    """Start the web UI of an attempt (an `AttemptRun` whose ERP is up) and wait until it answers
    on host loopback. On docker the UI reaches the ERP by its container's name and loses its
    default route before it is used. Raises `WebUnhealthy` (or the backend's start errors)."""
    sandbox = run.sandbox
    in_containers = getattr(run.backend, "isolation", "") == "docker"
    image = None
    if in_containers:
        image = run.backend.service_image(ERP)  # no image role of its own: the ERP's
        launch = _replace_url(launch, erp_url_by_name(sandbox, run.config))
    endpoints = sandbox.start_service(web_service(launch, run.config, image=image))
    if in_containers:
        drop_default_route(sandbox)
    sandbox.wait_service_healthy(WEB, error=WebUnhealthy)
    return WebEndpoints.of(endpoints, launch.login_key)


def erp_url_by_name(sandbox: Any, config: RuntimeConfig) -> str:
    """The ERP's agent API as the web UI calls it in containers: by the ERP container's name on
    the attempt network (the engine's DNS answers it there), not by an address."""
    return f"http://{sandbox.containers[ERP].name}:{config.erp_agent_port}"


def _replace_url(launch: WebLaunch, url: str) -> WebLaunch:
    from dataclasses import replace

    return replace(launch, agent_url=url)


def drop_default_route(sandbox: Any) -> list[str]:
    """Delete the web UI's default route (docker backend) and return the routing table left.

    The `web` network is not internal (the engine would not publish the port otherwise), so the
    engine gives the container a default route through its bridge. Without it the UI reaches
    only its own two subnets: the ERP's agent API on `attempt`, and the `web` bridge's host
    address (firewalled: replies only), so its replies go to the published port's traffic and
    nowhere else. A one-shot NET_ADMIN container joins the UI's network namespace (the UI keeps
    no capability), deletes the route and prints the table, which is checked here."""
    web = sandbox.containers[WEB]
    script = "ip -4 route del default 2>/dev/null; ip -6 route del default 2>/dev/null; ip -4 route show"
    code, table = run_route_script(sandbox, web, script, "web-netfix")
    if code != 0 or any(line.startswith("default") for line in table):
        raise WebUnhealthy(f"could not delete the web UI's default route (exit {code}): {table!r}",
                           phase=Phase.SERVICES, post_mortems=sandbox.post_mortems())
    return table
