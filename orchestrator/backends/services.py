"""Named services of a sandbox, as declarations: what runs, where it listens, how it is checked.

A service is a long-running process beside the agent (the ERP today; the model gateway and an
MCP server next). The attempt declares it with a `ServiceSpec` and the backend does the rest the
same way for every service: `Sandbox.start_service(spec)` creates it on the networks it joins
with its private files, streams its output to `logs/<log_name>.log`, and returns the URLs of its
listeners; `check_service(name)` says whether it still runs and answers its health check;
`service_post_mortem(name)` reports what is left of it; `stop_service(name)` stops it gracefully;
`close()` removes it with everything else. Adding a service means writing a declaration (see
`orchestrator/services/erp.py`), not new backend methods.

The command is an argv with placeholders the backend fills in, because only the backend knows
its Python, paths and addresses:

    {python}        the Python that has the project installed (/opt/venv/bin/python, or the host's)
    {data}          the service's private data folder, holding `files` (only this service sees it)
    {bind:NAME}     HOST:PORT where listener NAME must bind (docker: the service's fixed address
                    on the listener's network and the declared port; local: 127.0.0.1:0)

A service that declares `ready_line` prints one JSON line `{"event": "ready", NAME: URL, ...}` on
stdout once it listens; the local backend learns its ephemeral ports from it.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import httpx

from orchestrator.config import Limits

NetworkRole = Literal["attempt", "control", "egress"]
_PLACEHOLDER = re.compile(r"\{(python|data|bind:[a-z0-9_-]+)\}")


class ServiceSpecError(ValueError):
    """A service declaration that cannot be run as written (our bug, found before anything starts)."""


@dataclass(frozen=True)
class Listener:
    """One listening socket of a service.

    `name` is also the key of its URL in the ready line and in `ServiceEndpoints.urls`. A listener
    on the `control` network is reachable from the host only; one on `attempt` from the agent only.
    """

    name: str
    network: NetworkRole
    port: int
    # Published on the host at this address (e.g. 127.0.0.1) — a person's way in, nothing else's.
    # docker: an engine port binding to `publish_port` (0: an ephemeral port), which needs a
    # network that is not internal; the URL returned is the host's. local: binds loopback anyway.
    publish: str | None = None
    publish_port: int = 0


@dataclass(frozen=True)
class ServiceFile:
    """A file put into the service's `{data}` folder before it starts (owned by the service's user).

    Secrets (tokens, keys) go here, never into `env`: files do not show in `docker inspect`.
    """

    path: str  # relative to {data}
    data: bytes = field(repr=False)
    mode: int = 0o400


@dataclass(frozen=True)
class HealthCheck:
    """`GET <listener URL><path>` must answer 2xx (with the bearer token, when one is given)."""

    listener: str
    path: str
    bearer_token: str | None = field(default=None, repr=False)
    # `wait_service_healthy` waits while the service makes progress (its CPU time or log grows):
    # it fails after `timeout_s` with no progress seen, or after `max_wait_s` in all; at once if
    # the service exits. A backend that cannot see progress waits `timeout_s`.
    timeout_s: float = 60.0
    max_wait_s: float = 900.0


@dataclass(frozen=True)
class ServiceSpec:
    """The declaration of one named service of an attempt."""

    name: str  # erp | gateway | mcp ...: container name suffix, `pb.role` label, log file name
    command: tuple[str, ...]  # argv with the placeholders of the module docstring
    image: str | None = None  # docker image ref; None = the backend's image for `name`
    listeners: tuple[Listener, ...] = ()
    networks: tuple[NetworkRole, ...] = ()  # joined without a listener (e.g. egress for the gateway)
    files: tuple[ServiceFile, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # no secrets (see ServiceFile)
    ready_line: bool = False
    ready_timeout_s: float = 60.0
    health: HealthCheck | None = None
    user: str | None = None  # "uid:gid" inside the container; None = config.erp_user
    limits: Limits | None = None  # None = config.erp_limits
    address_offset: int | None = None  # host offset in each subnet; None = topology `addresses[name]`
    aliases: tuple[str, ...] = ()  # names the agent resolves on the attempt network (docker), e.g. model-gateway
    stop_timeout_s: float = 10.0  # SIGTERM, then SIGKILL after this

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9-]*", self.name):
            raise ServiceSpecError(f"service name {self.name!r}: lower-case letters, digits and '-' only")
        if not self.command:
            raise ServiceSpecError(f"service {self.name!r} has no command")
        names = [li.name for li in self.listeners]
        if len(set(names)) != len(names):
            raise ServiceSpecError(f"service {self.name!r} declares a listener twice: {names}")
        for word in self.command:
            for ph in _PLACEHOLDER.findall(word):
                if ph.startswith("bind:") and ph[5:] not in names:
                    raise ServiceSpecError(f"service {self.name!r}: {{{ph}}} names no declared listener")
        if self.health is not None and self.health.listener not in names:
            raise ServiceSpecError(f"service {self.name!r}: health check on undeclared listener {self.health.listener!r}")
        for f in self.files:
            if f.path.startswith("/") or ".." in f.path.split("/"):
                raise ServiceSpecError(f"service {self.name!r}: file path {f.path!r} must stay inside {{data}}")

    @property
    def log_name(self) -> str:
        """`logs/<log_name>.log` in the attempt folder."""
        return self.name

    def joined_networks(self) -> list[str]:
        """Every network the service joins: its listeners' (in order), then `networks`."""
        out: list[str] = []
        for role in [li.network for li in self.listeners] + list(self.networks):
            if role not in out:
                out.append(role)
        return out

    def port_bindings(self) -> dict[str, tuple[str, int | None]] | None:
        """The engine's port bindings of the published listeners (None: nothing is published)."""
        ports = {f"{li.port}/tcp": (li.publish, li.publish_port or None) for li in self.listeners if li.publish}
        return ports or None

    def expand(self, *, python: str, data: str, binds: Mapping[str, str]) -> list[str]:
        """The argv with every placeholder filled in."""

        def fill(m: re.Match[str]) -> str:
            key = m.group(1)
            if key == "python":
                return python
            if key == "data":
                return data
            return binds[key[5:]]

        return [_PLACEHOLDER.sub(fill, word) for word in self.command]


@dataclass(frozen=True)
class ServiceEndpoints:
    """Where a started service listens: listener name -> base URL (`http://host:port`)."""

    name: str
    urls: Mapping[str, str]

    def url(self, listener: str) -> str:
        try:
            return self.urls[listener]
        except KeyError:
            raise KeyError(f"service {self.name!r} has no listener {listener!r} (has {sorted(self.urls)})") from None


_probe_clients = threading.local()


def _probe_client() -> httpx.Client:
    """This thread's health-probe client, made once: making an `httpx.Client` costs ~0.05-0.1 s
    of CPU (its TLS context), and a health wait probes ten times a second while the service's
    own start needs the same cores. No keep-alive: every probe opens a fresh connection, as a
    client of its own did."""
    client = getattr(_probe_clients, "client", None)
    if client is None:
        client = httpx.Client(trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))
        _probe_clients.client = client
    return client


def probe_health(endpoints: ServiceEndpoints, check: HealthCheck, *, timeout_s: float = 2.0) -> str | None:
    """One health request; None when it answered 2xx, else what went wrong.

    `trust_env=False`: the host's proxy variables must never route sandbox traffic elsewhere.
    """
    headers = {"Authorization": f"Bearer {check.bearer_token}"} if check.bearer_token else {}
    url = endpoints.url(check.listener).rstrip("/") + check.path
    try:
        resp = _probe_client().get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"GET {check.path}: {type(exc).__name__}: {exc}"
    if resp.status_code >= 300:
        return f"GET {check.path}: HTTP {resp.status_code}"
    return None
