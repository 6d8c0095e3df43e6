"""The model gateway as a sandbox service (design.md, issue 11): one per attempt whose system
declares that it calls a model.

Listeners: the provider API on the attempt network (the agent reaches it as
`http://model-gateway:8080`), the control API on the gateway's own control network (the host's
side; never the ERP's control network). It also joins the egress network, its only route out.
The config (no secret), the keys (the real upstream key, the attempt's virtual key) and the
control token are private files of the service: they never appear in argv, env or
`docker inspect`, and never in the attempt record.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from orchestrator.backends.services import HealthCheck, Listener, NetworkRole, ServiceEndpoints, ServiceFile, ServiceSpec
from orchestrator.config import RuntimeConfig
from orchestrator.model_access import ModelAccess

GATEWAY = "gateway"  # the service name (topology.yaml `addresses.gateway`, logs/gateway.log)
GATEWAY_HOST = "model-gateway"  # the name the agent uses (an alias on the attempt network)
PROXY = "proxy"  # also the keys of the gateway's ready line
CONTROL = "control"
PROXY_PORT = 8080
CONTROL_PORT = 8081
GATEWAY_CONTROL_NET = "gateway-control"
GATEWAY_USER = "1002:1002"  # orchestrator.images.config.GATEWAY_UID


@dataclass(frozen=True)
class GatewayLaunch:
    """What the gateway of one attempt needs. Keys are held here only until the files are written."""

    attempt_id: str
    access: ModelAccess
    virtual_key: str = field(repr=False)
    control_token: str = field(repr=False)
    upstream_keys: dict[str, str] = field(default_factory=dict, repr=False)
    clients: tuple[str, ...] = ()  # the attempt network's subnet: the only clients accepted
    extra_hosts: tuple[str, ...] = ()  # Host values also answered (the proxy's own address:port)
    limiter_url: str | None = None  # the campaign's limiter service, as the gateway reaches it
    limiter_token: str | None = field(default=None, repr=False)

    def config_doc(self) -> dict[str, Any]:
        """The gateway config (model_gateway.config.GatewayConfig): no secret in it."""
        hosts = [f"{GATEWAY_HOST}:{PROXY_PORT}", *self.extra_hosts]
        doc: dict[str, Any] = {
            "attempt_id": self.attempt_id,
            "providers": {name: {"base_url": p.base_url, "models": list(p.models)}
                          for name, p in self.access.providers.items()},
            "hosts": hosts,
            "clients": list(self.clients),
            "budget": self.access.budget.model_dump(),
        }
        if self.access.provider_tools:
            doc["provider_tools"] = list(self.access.provider_tools)
        # Only when declared, so every other gateway config is unchanged.
        if self.access.limits:
            doc["limits"] = {name: lim.model_dump() for name, lim in self.access.limits.items()}
            if self.limiter_url:
                doc["limiter_url"] = self.limiter_url
        if (retry := self.access.retry_policy()) is not None:
            doc["retry"] = retry.model_dump()
        return doc

    def secrets_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"upstream_keys": dict(self.upstream_keys), "virtual_keys": [self.virtual_key]}
        if self.limiter_url and self.limiter_token:
            doc["limiter_token"] = self.limiter_token
        return doc


@dataclass(frozen=True)
class GatewayEndpoints:
    """Where the host reaches the gateway's control API, and the URL the agent uses."""

    control_url: str
    proxy_url: str  # http://<the gateway's fixed address on the attempt network>:8080
    agent_url: str  # what the agent's CLI is pointed at

    @classmethod
    def of(cls, endpoints: ServiceEndpoints, *, local: bool = False) -> GatewayEndpoints:
        """From what `Sandbox.start_service` returned. In containers the agent uses the fixed
        name `http://model-gateway:8080` (an alias on the attempt network); with the local
        backend, where the agent is a host process, the proxy's loopback address."""
        proxy = endpoints.url(PROXY)
        agent = proxy if local else f"http://{GATEWAY_HOST}:{PROXY_PORT}"
        return cls(control_url=endpoints.url(CONTROL), proxy_url=proxy, agent_url=agent)


def gateway_service(launch: GatewayLaunch, config: RuntimeConfig) -> ServiceSpec:
    """The declaration of the model-gateway service for one attempt."""
    files = [
        ServiceFile("config.json", json.dumps(launch.config_doc(), indent=1).encode(), 0o400),
        ServiceFile("secrets.json", json.dumps(launch.secrets_doc()).encode(), 0o400),
        ServiceFile("control.token", launch.control_token.encode(), 0o400),
    ]
    if launch.access.prices is not None:
        files.append(ServiceFile("prices.yaml", launch.access.prices.read_bytes(), 0o400))
    command: tuple[str, ...] = (
        "{python}", "-m", "model_gateway", "serve",
        "--config", "{data}/config.json", "--secrets-file", "{data}/secrets.json",
        "--proxy-bind", "{bind:proxy}", "--control-bind", "{bind:control}",
        "--control-token-file", "{data}/control.token",
    )  # fmt: skip
    if launch.access.prices is not None:
        command += ("--prices", "{data}/prices.yaml")
    return ServiceSpec(
        name=GATEWAY,
        command=command,
        # The gateway's own control network (topology.yaml), not the ERP's `control`.
        listeners=(Listener(PROXY, "attempt", PROXY_PORT),
                   Listener(CONTROL, cast(NetworkRole, GATEWAY_CONTROL_NET), CONTROL_PORT)),
        networks=("egress",),
        files=tuple(files),
        env={"PYTHONUNBUFFERED": "1"},
        ready_line=True,
        ready_timeout_s=config.erp_ready_timeout_s,
        health=HealthCheck(CONTROL, "/control/health", bearer_token=launch.control_token,
                           timeout_s=config.erp_ready_timeout_s),
        user=GATEWAY_USER,
        stop_timeout_s=config.stop_timeout_s,
        aliases=(GATEWAY_HOST,),
    )


FAKE_PROVIDER = "fake-provider"
FAKE_PORT = 9000


def fake_provider_service(script: bytes, config: RuntimeConfig) -> ServiceSpec:
    """The project's fake provider (model_gateway.fake_provider) as the gateway's upstream: on the
    egress network only, playing `script`; what it received is read from `GET /_fake/requests`."""
    return ServiceSpec(
        name=FAKE_PROVIDER,
        command=("{python}", "-m", "model_gateway", "fake-provider", "--script", "{data}/script.yaml",
                 "--bind", "{bind:url}", "--record", "{data}/received.jsonl"),
        listeners=(Listener("url", "egress", FAKE_PORT),),
        files=(ServiceFile("script.yaml", script, 0o400),),
        env={"PYTHONUNBUFFERED": "1"},
        ready_line=True,
        ready_timeout_s=config.erp_ready_timeout_s,
        health=HealthCheck("url", "/_fake/health", timeout_s=config.erp_ready_timeout_s),
        user=GATEWAY_USER,
        stop_timeout_s=config.stop_timeout_s,
    )
