"""The model gateway's part in one attempt, for the attempt runner to call at its phases.

    run = ModelRun.open(sandbox, config, attempt_id=..., system=spec, access=access, paths=paths)
    env = run.before_turn(n)            # marks the turn; the agent's base URL, virtual key, model
    usage = run.after_turn(n)           # the gateway's figures for turn n (turns.jsonl)
    usage = run.finish()                # revokes the key, drains the usage log (result.json)

`open` starts (for a `fake_script` or `harness_oracle` provider) the fake provider on the egress
side, opens (for a provider on the host's loopback, in containers) the gateway's door to it, then
starts the gateway, through the sandbox's named-service interface, and tails the usage log into
`gateway.jsonl`. Keys live in memory and in the gateway's private files only: nothing here
writes one to the attempt folder. A turn whose every model call failed on the provider's side is
raised as `ProviderOutage`, an infrastructure error (retried, never scored).
"""
from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agent_sandbox.provider_wait import PROVIDER_WAIT_KEY_ENV, PROVIDER_WAIT_URL_ENV
from agent_sandbox.systems import SystemSpec
from model_gateway.proxy import WAIT_PATH
from orchestrator.attempt.model_usage import GatewayControl, GatewayUnavailable, UsageLogStreamer, attempt_usage, turn_usage
from orchestrator.backends.docker.route_fix import run_route_script
from orchestrator.cells import CLEAN
from orchestrator.errors import ConfigError, InfraError, Phase, TaskError
from orchestrator.model_access import ModelAccess, ModelAccessError, load_model_access, new_virtual_key
from orchestrator.services.gateway import (
    FAKE_PROVIDER,
    GATEWAY,
    GatewayEndpoints,
    GatewayLaunch,
    fake_provider_service,
    gateway_service,
)

USAGE_LOG_FILE = "gateway.jsonl"
FAKE_RECORD_FILE = "fake-provider.jsonl"
HARNESS_ORACLE_FILE = "harness-oracle-script.json"  # the conversation a harness_oracle fake played


class ProviderOutage(InfraError):
    """Every model call of a turn failed on the provider's side: not the agent's failure."""


class GatewayFailed(InfraError):
    """The gateway (or its control API) stopped answering."""


@dataclass
class ModelRun:
    """The gateway of one attempt, as the runner sees it."""

    sandbox: Any
    system: SystemSpec
    access: ModelAccess
    endpoints: GatewayEndpoints
    control: GatewayControl
    streamer: UsageLogStreamer
    virtual_key: str = field(repr=False)
    model: str
    attempt_dir: Path
    fake_url: str | None = None
    services: tuple[str, ...] = ()

    @classmethod
    def open(cls, sandbox: Any, config: Any, *, attempt_id: str, system: SystemSpec, access: ModelAccess,
             attempt_dir: Path, gateway_image: str | None = None, local: bool = False,
             clients: tuple[str, ...] = (), fake_script: bytes | None = None) -> ModelRun:
        """Start the fake provider (if declared: it plays `fake_script`, else the declared file)
        and the gateway; start tailing the usage log."""
        assert system.model is not None, "only systems that declare a model get a gateway"
        provider = system.model.provider
        model = access.model_for(provider, system.model.model)
        declared = access.providers[provider]
        started: list[str] = []
        fake_url = None
        upstream = access
        if declared.is_fake:
            if fake_script is None:
                assert declared.fake_script is not None, "a harness_oracle provider is given its script"
                fake_script = declared.fake_script.read_bytes()
            spec = fake_provider_service(fake_script, config)
            if gateway_image:
                spec = _with_image(spec, gateway_image)
            fake = sandbox.start_service(spec)
            started.append(FAKE_PROVIDER)
            sandbox.wait_service_healthy(FAKE_PROVIDER, error=GatewayFailed)
            fake_url = fake.url("url")
            upstream = access.model_copy(update={"providers": {
                provider: declared.model_copy(update={"base_url": fake_url, "fake_script": None,
                                                      "harness_oracle": False})}})
        if not local:
            upstream = through_host_doors(sandbox, upstream)
        try:
            keys: dict[str, str] = {str(name): key for name, p in upstream.providers.items()
                                    if (key := p.read_key()) is not None}
        except ModelAccessError as exc:
            raise InfraError(f"model access: {exc}", phase=Phase.SERVICES) from None
        token = secrets.token_hex(32)
        vkey = new_virtual_key()
        limiter_url, limiter_token = _limiter_for(sandbox, upstream, local)
        launch = GatewayLaunch(attempt_id=attempt_id, access=upstream, virtual_key=vkey, control_token=token,
                               upstream_keys=keys, clients=clients, limiter_url=limiter_url,
                               limiter_token=limiter_token)
        spec = gateway_service(launch, config)
        if gateway_image:
            spec = _with_image(spec, gateway_image)
        raw = sandbox.start_service(spec)
        started.append(GATEWAY)
        sandbox.wait_service_healthy(GATEWAY, error=GatewayFailed)
        if not local:
            pin_gateway_routes(sandbox, upstream_ips(upstream) + _literal_ips(limiter_url))
        endpoints = GatewayEndpoints.of(raw, local=local)
        control = GatewayControl(endpoints.control_url, token)
        streamer = UsageLogStreamer(control, attempt_dir / USAGE_LOG_FILE)
        streamer.start()
        return cls(sandbox=sandbox, system=system, access=access, endpoints=endpoints, control=control,
                   streamer=streamer, virtual_key=vkey, model=model, attempt_dir=attempt_dir, fake_url=fake_url,
                   services=tuple(started))

    def before_turn(self, n: int) -> dict[str, str]:
        """Mark turn `n` in the usage log; the environment the agent's CLI needs for it."""
        assert self.system.model is not None
        try:
            self.control.mark_turn(n)
        except GatewayUnavailable as exc:
            raise GatewayFailed(str(exc), phase=Phase.TURN) from None
        env = self.system.model.turn_env(self.endpoints.agent_url, self.virtual_key, self.model)
        if self.access.limits or self.access.retry is not None:
            # The entrypoint extends the turn's budget by the provider wait (orchestrator/model_limits.py).
            env.update({PROVIDER_WAIT_URL_ENV: self.endpoints.agent_url + WAIT_PATH, PROVIDER_WAIT_KEY_ENV: self.virtual_key})
        return env

    def after_turn(self, n: int) -> dict[str, Any]:
        """The gateway's usage of turn `n` (turns.jsonl); `check_outage` judges it afterwards."""
        try:
            self.streamer.pull()
            wait = self.control.provider_wait(n)
        except GatewayUnavailable as exc:
            raise GatewayFailed(str(exc), phase=Phase.TURN) from None
        usage = turn_usage(self.streamer.rows, n)
        if self.access.limits or self.access.retry is not None or wait:
            usage["provider_wait_s"] = round(wait, 3)  # what the turn's budget was extended by
        return usage

    def wait_of(self, n: int) -> Callable[[], float]:
        """Turn `n`'s provider wait as the backend's hard deadline reads it (`TurnLaunch.provider_wait`)."""
        return lambda: self.provider_wait(n)

    def provider_wait(self, n: int) -> float:
        """Turn `n`'s provider wait so far (the runtime's hard deadline asks it; 0 when the
        gateway does not answer: the deadline is then the plain budget)."""
        try:
            return self.control.provider_wait(n)
        except GatewayUnavailable:
            return 0.0

    @staticmethod
    def check_outage(usage: dict[str, Any], n: int) -> None:
        """Raise ProviderOutage when the provider failed every model call of the turn."""
        if usage.get("provider_outage"):
            raise ProviderOutage(f"turn {n}: every model call failed on the provider's side "
                                 f"({usage['upstream_errors']} errors, none succeeded)", phase=Phase.TURN)

    def finish(self) -> dict[str, Any]:
        """Revoke the virtual key, drain the usage log, keep the fake's record; the attempt's usage."""
        try:
            self.control.revoke()
            rows = self.streamer.drain()
            price_version = self.control.health().get("price_version")
        except GatewayUnavailable as exc:
            raise GatewayFailed(str(exc), phase=Phase.FREEZE) from None
        finally:
            self.streamer.stop()
        self._keep_fake_record()
        return attempt_usage(rows, price_version)

    def _keep_fake_record(self) -> None:
        if self.fake_url is None:
            return
        try:
            with httpx.Client(timeout=10, trust_env=False) as http:
                items = http.get(self.fake_url + "/_fake/requests").json().get("items") or []
        except (httpx.HTTPError, ValueError):
            return
        with open(self.attempt_dir / FAKE_RECORD_FILE, "w", encoding="utf-8") as fh:
            for item in items:
                headers = item.get("headers") or {}
                for name in ("x-api-key", "authorization"):  # the real key stays out of the record
                    if name in headers:
                        headers[name] = "(redacted)"
                fh.write(json.dumps(item, sort_keys=True) + "\n")

    def close(self) -> None:
        """Stop tailing (the sandbox removes the containers)."""
        self.streamer.stop()
        self.control.close()


def open_for_attempt(run: Any) -> ModelRun | None:
    """The gateway of an attempt run (orchestrator.attempt.runner.AttemptRun) whose system calls a
    model, started in its services phase; None for every other system."""
    system = run.resolved.system if run.resolved is not None else None
    if system is None or not system.calls_model:
        return None
    if run.spec.model_access is None:
        raise ConfigError(f"system {system.name!r} calls a model: give --model-access FILE "
                          "(see agent_sandbox/examples/model-access.yaml)")
    try:
        access = load_model_access(Path(run.spec.model_access))
    except ModelAccessError as exc:
        raise ConfigError(str(exc)) from None
    sandbox = run.sandbox
    docker = getattr(run.backend, "isolation", "") == "docker"
    gateway_image = None
    clients: tuple[str, ...] = ()
    if docker:
        from orchestrator.images import ensure_images

        gateway_image = ensure_images(run.backend.client).gateway.tag
        clients = (sandbox.blocks["attempt"].subnet,)
    return ModelRun.open(sandbox, run.config, attempt_id=run.run_id, system=system, access=access,
                         attempt_dir=run.paths.root, gateway_image=gateway_image, local=not docker, clients=clients,
                         fake_script=harness_oracle_script(run, access, system))


def harness_oracle_script(run: Any, access: ModelAccess, system: SystemSpec) -> bytes | None:
    """The harness-oracle conversation of the attempt's scenario when its provider declares
    `harness_oracle` (kept in the attempt folder as harness-oracle-script.json); else None."""
    assert system.model is not None
    provider = system.model.provider
    if not access.providers[provider].harness_oracle:
        return None
    if run.spec.cell.condition != CLEAN:
        raise ConfigError(f"{run.spec.cell}: the harness oracle replays the oracle's clean run; "
                          f"it cannot run under the condition {run.spec.cell.condition!r}")
    from orchestrator.harness_oracle.conversation import harness_oracle_script as script_of
    from orchestrator.scenarios.oracle_run import OracleRunError

    try:
        script = script_of(run.scenario.dir, provider)
    except (OracleRunError, ValueError) as exc:
        raise TaskError(f"harness oracle of {run.spec.cell.task} seed {run.spec.seed}: {exc}",
                        phase=Phase.SERVICES) from exc
    (run.paths.root / HARNESS_ORACLE_FILE).write_bytes(script)
    return script


def agent_image(run: Any) -> str | None:
    """The image of a command system's turns: a project image role (`agent-claude`) becomes its
    content-hash tag (built on first use); anything else is used as given."""
    image = run.resolved.image if run.resolved is not None else None
    if image is None or getattr(run.backend, "isolation", "") != "docker":
        return image
    from orchestrator.images import config as image_config
    from orchestrator.images import ensure_variant

    if image in image_config.VARIANT_IMAGES:
        try:
            return ensure_variant(run.backend.client, image).tag
        except Exception as exc:  # noqa: BLE001 — ImageBuildError and engine errors alike
            raise InfraError(f"image {image}: {exc}", phase=Phase.SERVICES) from exc
    return image


def through_host_doors(sandbox: Any, access: ModelAccess) -> ModelAccess:
    """The access the gateway is given in containers: each provider the user serves on the host's
    loopback (`ProviderAccess.on_host`) is reached at the door the sandbox opens for the gateway
    alone (a relay on the egress bridge's host address: backends/docker/host_relay.py)."""
    doors = {}
    for name, p in access.providers.items():
        target = p.on_host()
        if target is not None:
            ip, port = sandbox.open_host_port("egress", GATEWAY, target)
            doors[name] = p.model_copy(update={"base_url": f"http://{ip}:{port}"})
    return access.model_copy(update={"providers": {**access.providers, **doors}}) if doors else access


def upstream_ips(access: ModelAccess) -> list[str]:
    """IPv4 addresses of the declared upstream hosts, resolved on the host (a literal address is
    itself). The gateway gets a route to these and to nothing else beyond its egress subnet."""
    import ipaddress
    import socket
    from urllib.parse import urlsplit

    out: set[str] = set()
    for p in access.providers.values():
        host = urlsplit(p.base_url or "").hostname
        if not host:
            continue
        try:
            out.add(str(ipaddress.IPv4Address(host)))
            continue
        except ValueError:
            pass
        try:
            out.update(str(i[4][0]) for i in socket.getaddrinfo(host, 443, socket.AF_INET, socket.SOCK_STREAM))
        except OSError as exc:
            raise InfraError(f"cannot resolve the upstream {host}: {exc}", phase=Phase.SERVICES) from None
    return sorted(out)


def pin_gateway_routes(sandbox: Any, ips: list[str]) -> list[str]:
    """Replace the gateway's default route by host routes to `ips` only (docker backend).

    The egress network is the gateway's route out; left as it is, the gateway could send packets
    anywhere the host routes them (another attempt's addresses, outside hosts). A one-shot
    NET_ADMIN container joins the gateway's network namespace (the gateway itself keeps no
    capability), deletes the default route, adds a /32 route per upstream address beyond the
    egress subnet via the egress bridge, and prints the table left, which is checked here.
    Upstreams on the egress subnet itself (the fake provider) need no route."""
    import ipaddress

    block = sandbox.blocks["egress"]
    subnet = ipaddress.IPv4Network(block.subnet)
    beyond = [ip for ip in ips if ipaddress.IPv4Address(ip) not in subnet]
    script = "ip -4 route del default 2>/dev/null; " + "".join(
        f"ip -4 route add {ip}/32 via {block.gateway} || exit 3; " for ip in beyond) + "ip -4 route show"
    gateway = sandbox.containers[GATEWAY]
    code, table = run_route_script(sandbox, gateway, script, "gateway-netfix")
    if code != 0 or any(line.startswith("default") for line in table):
        raise GatewayFailed(f"could not pin the gateway's routes (exit {code}): {table!r}",
                            phase=Phase.SERVICES)
    return table


def _limiter_for(sandbox: Any, access: ModelAccess, local: bool) -> tuple[str | None, str | None]:
    """The campaign limiter's URL as this attempt's gateway reaches it, and its token; (None,
    None) when no limits are declared or no campaign runs a limiter (the gateway then keeps
    them itself). A limiter on the host's loopback is reached, in containers, through a door
    opened for the gateway alone, like a model served on the host."""
    from urllib.parse import urlsplit

    from orchestrator.model_limits import campaign_limiter

    found = campaign_limiter() if access.limits else None
    if found is None:
        return None, None
    url, token = found
    parts = urlsplit(url)
    if not local and parts.hostname in ("127.0.0.1", "localhost", "::1"):
        ip, port = sandbox.open_host_port("egress", GATEWAY, ("127.0.0.1", parts.port or 80))
        url = f"http://{ip}:{port}"
    return url, token


def _literal_ips(url: str | None) -> list[str]:
    import ipaddress
    from urllib.parse import urlsplit

    try:
        return [str(ipaddress.IPv4Address(urlsplit(url).hostname or ""))] if url else []
    except ValueError:
        return []


def _with_image(spec: Any, image: str) -> Any:
    from dataclasses import replace

    return replace(spec, image=image)
