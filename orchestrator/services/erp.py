"""The ERP as a sandbox service: bb-erp serving the scenario database (contracts §1, §3).

Two listeners, each bound to one network's address only: the agent API on the attempt network,
the control API on the control network (the host's side). The database, world file and control
token are private files of the service; the token never appears in argv, env or `docker inspect`.
So are the attempt's fresh API token secrets (`tokens.json`, attempt/credentials.py).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.backends.services import HealthCheck, Listener, ServiceEndpoints, ServiceFile, ServiceSpec
from orchestrator.config import RuntimeConfig

ERP = "erp"
AGENT_API = "agent"  # also the keys of the ERP's ready line
CONTROL_API = "control"


@dataclass(frozen=True)
class ErpLaunch:
    """What the ERP needs. Host paths; the backend copies them where only the ERP can read."""

    db: Path
    world: Path
    control_token: str = field(repr=False)
    faults: str | None = None
    fault_profiles: Path | None = None  # a file the ERP reads with --fault-profiles
    #: token id -> secret, applied by the ERP before its first request (attempt/credentials.py)
    token_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ErpEndpoints:
    """Where the host reaches the control API, and the ERP_URL the agent gets."""

    control_url: str
    agent_url: str

    @classmethod
    def of(cls, endpoints: ServiceEndpoints) -> ErpEndpoints:
        """The ERP's two URLs out of what `Sandbox.start_service` returned."""
        return cls(control_url=endpoints.url(CONTROL_API), agent_url=endpoints.url(AGENT_API))


def erp_service(launch: ErpLaunch, config: RuntimeConfig) -> ServiceSpec:
    """The declaration of the ERP service for one attempt."""
    files = [
        ServiceFile("scenario.db", launch.db.read_bytes(), 0o600),
        ServiceFile("world.json", launch.world.read_bytes(), 0o400),
        ServiceFile("control.token", launch.control_token.encode(), 0o400),
    ]
    command = [
        "{python}", "-m", "erp_service", "serve",
        "--db", "{data}/scenario.db", "--world", "{data}/world.json",
        "--agent-bind", "{bind:agent}", "--control-bind", "{bind:control}",
        "--control-token-file", "{data}/control.token",
    ]  # fmt: skip
    if launch.token_secrets:
        files.append(ServiceFile("tokens.json", json.dumps(dict(launch.token_secrets)).encode(), 0o400))
        command += ["--token-secrets", "{data}/tokens.json"]
    if launch.faults:
        command += ["--faults", launch.faults]
    if launch.fault_profiles is not None:
        name = f"fault-profiles{launch.fault_profiles.suffix}"
        files.append(ServiceFile(name, launch.fault_profiles.read_bytes(), 0o400))
        command += ["--fault-profiles", f"{{data}}/{name}"]
    return ServiceSpec(
        name=ERP,
        command=tuple(command),
        listeners=(
            Listener(AGENT_API, "attempt", config.erp_agent_port),
            Listener(CONTROL_API, "control", config.erp_control_port),
        ),
        files=tuple(files),
        env={"PYTHONUNBUFFERED": "1"},
        ready_line=True,
        ready_timeout_s=config.erp_ready_timeout_s,
        health=HealthCheck(
            CONTROL_API, "/control/health", bearer_token=launch.control_token, timeout_s=config.erp_ready_timeout_s
        ),
        user=config.erp_user,
        limits=config.erp_limits,
        stop_timeout_s=config.stop_timeout_s,
    )
