"""The web UI as a sandbox service: `python -m erp_web serve` in front of the ERP's agent API.

It runs from the ERP image (its wheels are in images/erp/requirements.txt) as its own service.
It holds the signed-in user's token (the agent user's: a person in human mode works as that
user), the secret of the sign-in link and the host's token for its turn endpoints, all as
private files. It calls the agent API only, never the control API: every click is an audited
agent request. Its listener is the person's way in: on the local backend it binds host
loopback only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.backends.services import HealthCheck, Listener, ServiceEndpoints, ServiceFile, ServiceSpec
from orchestrator.config import RuntimeConfig

WEB = "web"
WEB_UI = "web"  # the listener's name, also the key of the ready line
WEB_PORT = 8090


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
    """The UI's base URL and the sign-in link a person opens."""

    url: str
    login_key: str = field(repr=False)

    @property
    def login_url(self) -> str:
        return f"{self.url}/login?key={self.login_key}"

    @classmethod
    def of(cls, endpoints: ServiceEndpoints, login_key: str) -> WebEndpoints:
        return cls(endpoints.url(WEB_UI), login_key)


def web_service(launch: WebLaunch, config: RuntimeConfig) -> ServiceSpec:
    """The declaration of the web UI service of one attempt."""
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
        listeners=(Listener(WEB_UI, "attempt", WEB_PORT),),
        files=tuple(files),
        env={"PYTHONUNBUFFERED": "1"},
        ready_line=True,
        ready_timeout_s=config.erp_ready_timeout_s,
        health=HealthCheck(WEB_UI, "/healthz", timeout_s=config.erp_ready_timeout_s),
        user=config.erp_user,
        limits=config.erp_limits,
        stop_timeout_s=config.stop_timeout_s,
    )
