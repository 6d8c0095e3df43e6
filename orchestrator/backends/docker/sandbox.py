"""The docker backend: one attempt = private networks, volumes, a container per named service
(the ERP today) and a fresh agent container per turn (design.md "Topology of one attempt",
networks/topology.yaml).

    attempt network    internal, bridge IPv4 inhibited   services' agent-side listeners + the
                                                         agent namespace
    control network    internal                          services' host-side listeners; the host
                                                         reaches it through the bridge address
    other networks     on demand (topology.yaml)         e.g. egress (host_firewall: docker_firewall.py)
    netns container    idle, on the attempt network      the agent side's one idle container
                                                         (agent_holder.py): holds its network
                                                         namespace (default route deleted by itself,
                                                         IPv6 off; each turn's container joins it)
                                                         and keeps the quota volumes mounted
    <service>-data     mounted only into that service    its declared files ({data})
    workspace volume   mounted into each agent container handbook/ + the agent's files
    turn volume        one per turn, mounted at /turn    prompt.txt, system.json, context.json, out/

A service container is created on its first network with a fixed address, connected to its other
networks with fixed addresses, filled through the archive API (so secrets never show in
`docker inspect` or the environment), then started; each listener binds one address only.
"""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.types import IPAMConfig, IPAMPool

from networks.subnets import Block, SubnetPool, SubnetsExhausted
from networks.topology import NetworkSpec, load_topology
from orchestrator import labels as L
from orchestrator.admission import start_slots
from orchestrator.backends.base import AttemptContext, Backend, Sandbox, TurnLaunch, TurnRun
from orchestrator.backends.docker.agent_holder import start_agent_holder, turn_mount
from orchestrator.backends.docker.archives import Entry, build_tar, safe_extract, stream_file, tree_entries
from orchestrator.backends.docker.containers import (
    PYTHON,
    EventRecorder,
    LogFollower,
    engine_error,
    merge_events,
    post_mortem_of,
    published_urls,
    start_container,
    uid_gid,
)
from orchestrator.backends.docker.firewall import BRIDGE_NAME_OPTION, HostFirewall, remove_networks
from orchestrator.backends.docker.host_relay import HostDoor, open_host_door
from orchestrator.backends.docker.limits import limit_client, process_limiter
from orchestrator.backends.docker.reaper import reap
from orchestrator.backends.docker.service_containers import WarmPoolOwner, create_service_container
from orchestrator.backends.docker.turns import DockerTurns, TurnHost
from orchestrator.backends.docker.volume_quota import tmpfs_volume_options
from orchestrator.backends.docker.warm_pool import WarmPool, WarmSlot, alive
from orchestrator.backends.services import ServiceEndpoints, ServiceSpec, ServiceSpecError
from orchestrator.config import RuntimeConfig
from orchestrator.errors import ContainerStartError, EngineError, InfraError, Phase, PostMortem, ServiceUnhealthy
from orchestrator.in_thread import InThread
from orchestrator.integrity import ServiceDeath
from orchestrator.logs import get_logger

log = get_logger(__name__)


class DockerBackend(WarmPoolOwner, Backend):
    """Attempts in containers on private networks (isolation: docker)."""

    name = "docker"
    isolation = "docker"

    def __init__(self, config: RuntimeConfig, client: docker.DockerClient | None = None):
        self.config = config
        self.client = client or docker.from_env(timeout=int(config.docker_api_timeout_s))
        # Every engine request of this backend goes through the process-wide API limit
        # (docker_limits.py: long polls bypass it, removals have their own slots).
        self.api_limiter = process_limiter(config.docker_api_slots, config.docker_api_teardown_slots)
        limit_client(self.client, self.api_limiter, timeout_s=config.docker_api_timeout_s)
        self.topology = load_topology()
        self.pool = SubnetPool(config.subnet_range, config.subnet_prefix)
        self._has_init: bool | None = None
        self._service_cgroup_parent: str | None = config.service_cgroup_parent
        self.erp_image: str | None = config.images.erp
        self.agent_image: str | None = config.images.agent
        self.warm_pool: WarmPool | None = None  # made at the first ERP start when config.warm_erp_slots > 0
        self.pool_lock = threading.Lock()

    @property
    def has_init(self) -> bool:
        """Whether the engine has docker-init (then every container runs under it: `init=True`)."""
        if self._has_init is None:
            try:
                comps = self.client.version().get("Components") or []
                self._has_init = any(c.get("Name") == "docker-init" for c in comps) or bool(
                    self.client.info().get("InitBinary")
                )
            except docker.errors.DockerException:
                self._has_init = False
        return self._has_init

    @property
    def service_cgroup_parent(self) -> str | None:
        """The cgroup parent of service containers (`RuntimeConfig.service_cgroup_parent`,
        "auto" resolved from the engine's cgroup version and driver once)."""
        if self._service_cgroup_parent == "auto":
            try:
                info = self.client.info()
                v1_cgroupfs = str(info.get("CgroupVersion")) == "1" and info.get("CgroupDriver") == "cgroupfs"
            except docker.errors.DockerException:
                v1_cgroupfs = False
            self._service_cgroup_parent = "/" if v1_cgroupfs else None
        return self._service_cgroup_parent

    def prepare(self) -> None:
        """Reap objects left by dead orchestrators; resolve (build if missing) and check the images."""
        try:
            report = reap(self.client)
            if report.removed:
                log.info("reaped_at_start", summary=report.summary())
            self.resolve_images()
            for ref in (self.erp_image, self.agent_image):
                self.client.images.get(ref)
        except docker.errors.ImageNotFound as exc:
            raise InfraError(f"image missing: {exc.explanation}; run `orchestrate images build`", phase=Phase.OPEN) from exc
        except docker.errors.DockerException as exc:
            raise EngineError(f"engine unavailable: {exc}", phase=Phase.OPEN) from exc

    def resolve_images(self) -> None:
        """Image tags from the config, or from the image builder when the config leaves them unset."""
        if self.erp_image and self.agent_image:
            return
        from orchestrator.images import ensure_images  # lazy: builds on first use

        try:
            images = ensure_images(self.client)
        except Exception as exc:  # noqa: BLE001 — ImageBuildError and engine errors alike
            raise InfraError(f"images: {exc}", phase=Phase.OPEN) from exc
        self.erp_image = self.erp_image or images.erp.tag
        self.agent_image = self.agent_image or images.agent.tag

    def service_image(self, service: str) -> str:
        """The image a service runs when its declaration names none."""
        image = {"erp": self.erp_image}.get(service)
        if image is None:
            raise ServiceSpecError(f"service {service!r} declares no image and the backend has none for it")
        return image

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"backend": self.name, "isolation": self.isolation, "init": self.has_init,
                                "service_cgroup_parent": self.service_cgroup_parent}
        try:
            info["engine"] = self.client.version().get("Version")
            info["images"] = {
                role: {"tag": ref, "id": self.client.images.get(ref).id}
                for role, ref in (("erp", self.erp_image), ("agent", self.agent_image))
            }
        except docker.errors.DockerException as exc:
            info["describe_error"] = str(exc)
        return info

    def used_subnets(self) -> list[str]:
        """Every IPv4 subnet the engine's networks hold now."""
        out = []
        for net in self.client.networks.list():
            for cfg in (net.attrs.get("IPAM") or {}).get("Config") or []:
                if cfg.get("Subnet"):
                    out.append(cfg["Subnet"])
        return out

    def create_network(self, name: str, spec: NetworkSpec, labels: dict[str, str],
                       options: dict[str, str] | None = None) -> tuple[Block, Any]:
        """Create one network of the topology on a fresh subnet (`options` replace the spec's)."""

        def create(block: Block):
            ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=block.subnet, gateway=block.gateway, iprange=block.ip_range)])
            return self.client.networks.create(
                name,
                driver="bridge",
                internal=spec.internal,
                options=spec.options if options is None else options,
                ipam=ipam,
                labels=labels,
                enable_ipv6=spec.enable_ipv6,
                check_duplicate=True,
            )

        try:
            return self.pool.allocate(create, used=self.used_subnets())
        except SubnetsExhausted as exc:  # the range is full: the infrastructure's limit, not the agent's
            raise InfraError(f"{type(exc).__name__}: {exc}", phase=Phase.OPEN) from exc
        except docker.errors.DockerException as exc:
            raise engine_error(f"create network {name}", Phase.OPEN)(exc) from exc

    def open_attempt(self, ctx: AttemptContext) -> DockerSandbox:
        sandbox = DockerSandbox(self, ctx)
        try:
            sandbox.create_resources()
        except BaseException:
            sandbox.close()
            raise
        return sandbox


class DockerSandbox(Sandbox):
    """The containers, networks and volumes of one attempt."""

    isolation = "docker"

    def __init__(self, backend: DockerBackend, ctx: AttemptContext):
        super().__init__()
        self.backend = backend
        self.client = backend.client
        self.config = backend.config
        self.ctx = ctx
        self.prefix = L.object_prefix(ctx.attempt_id)  # names reach the agent (DNS): nothing of the attempt in them
        self.owner = L.Owner.current()
        self.networks: dict[str, Any] = {}
        self.blocks: dict[str, Block] = {}
        self.firewalls: dict[str, HostFirewall] = {}  # network role -> its host INPUT rules
        self.doors: list[HostDoor] = []  # relays to host loopback ports (host_relay.py)
        self.volumes: dict[str, Any] = {}
        self.containers: dict[str, Any] = {}  # role -> container (each service by name, netns, helper, turn-<n>)
        self._followers: list[LogFollower] = []
        self._ready: dict[str, threading.Event] = {}  # service -> its follower's ready signal
        self._recorders: dict[str, EventRecorder] = {}
        self._agent_side: InThread | None = None  # the agent side's holder and its turn volumes, starting
        # the turns' containers and volumes, made ahead, removed beside
        self.turns = DockerTurns(TurnHost(
            prefix=self.prefix, client=self.client, config=self.config, agent_image=lambda: backend.agent_image,
            has_init=backend.has_init, containers=self.containers, volumes=self.volumes, labels=self.labels,
            agent_namespace=self.agent_namespace, remove_container=self._remove_container,
            remove_volume=self._remove_volume, held_turns=frozenset(ctx.turns)))
        self.addresses: dict[str, dict[str, str]] = {}  # service -> network role -> IPv4
        self._warm: WarmSlot | None = None  # a slot of the warm pool, taken at open, until the ERP adopts it
        self.admission = start_slots(self.config)  # host-wide: service starts queue here

    def labels(self, role: str) -> dict[str, str]:
        return L.attempt_labels(self.ctx.campaign, self.ctx.attempt_id, role, self.owner)

    # -- resources ---------------------------------------------------------------------------

    def create_resources(self) -> None:
        """The networks topology.yaml builds (attempt, control), the workspace volume; the
        declared turns' volumes and the agent side's holder are made in a thread, beside the
        services' start (the ERP's takes seconds), and waited for where first used
        (`agent_namespace`)."""
        self._take_warm_slot()
        for spec in self.backend.topology.built():
            self.ensure_network(spec.role)
        self._create_volume("workspace", self.config.workspace_volume_bytes, uid_gid(self.config.agent_user))
        self._agent_side = InThread(f"{self.prefix}-agent-side", self._start_agent_side, Phase.OPEN)

    def _take_warm_slot(self) -> None:
        """A ready slot of the warm pool, if any: its networks become this attempt's; its standby
        ERP waits (role `erp-standby`) for `_start_service` to adopt it, or for the close."""
        pool = self.backend.warm_pool
        slot = pool.take(pool.shape) if pool is not None else None
        if slot is None:
            return
        self.networks.update(slot.networks)
        self.blocks.update(slot.blocks)
        self.volumes["erp-data"] = slot.volume
        self.containers["erp-standby"] = slot.erp
        if slot.recorder is not None:
            self._recorders["erp-standby"] = slot.recorder
        self._warm = slot
        if not alive(slot.erp):  # died waiting: the ERP starts cold on the slot's networks
            self._drop_standby()

    def _drop_standby(self) -> None:
        """Remove the taken slot's standby ERP and its volume (it died, or an ERP of another shape starts)."""
        self._warm = None
        if (rec := self._recorders.pop("erp-standby", None)) is not None:
            rec.close()
        for problem in (self._remove_container("erp-standby"), self._remove_volume("erp-data")):
            if problem:
                raise EngineError(f"remove the unused standby ERP: {problem}", phase=Phase.SERVICES)

    def _start_agent_side(self) -> None:
        """The declared turns' quota volumes, then the holder that keeps them and the workspace
        mounted and holds the agent's network namespace (agent_holder.py)."""
        cfg = self.config
        held = {self.volumes["workspace"].name: cfg.container_paths.workspace}
        for n in self.ctx.turns:
            try:
                volume = self.client.volumes.create(
                    f"{self.prefix}-turn-{n}", labels=self.labels("turn"), driver="local",
                    driver_opts=tmpfs_volume_options(cfg.turn_volume_bytes, uid=0, gid=0))
            except docker.errors.DockerException as exc:
                raise engine_error(f"create the volume of turn {n}", Phase.OPEN)(exc) from exc
            self.volumes[f"turn-{n}"] = volume
            held[volume.name] = turn_mount(n)
        start_agent_holder(self.client, self.backend.agent_image, name=f"{self.prefix}-netns",
                           labels=self.labels("netns"), network=self.networks["attempt"].name,
                           dns=self.blocks["attempt"].gateway, user=cfg.agent_user, volumes=held,
                           containers=self.containers)

    def agent_namespace(self) -> Any:
        """The agent side's holder (agent_holder.py), once it is ready (its default route
        deleted, its privileges dropped); raises what its start raised (phase: open)."""
        if self._agent_side is not None:
            self._agent_side.wait()
        return self.containers["netns"]

    def ensure_network(self, role: str) -> Any:
        """The attempt's network `role`, created from its topology.yaml entry on first use."""
        if role not in self.networks:
            spec = self.backend.topology.networks.get(role)
            if spec is None:
                raise ServiceSpecError(f"network {role!r} is not declared in networks/topology.yaml")
            name = f"{self.prefix}-{role}"
            wall = HostFirewall(name, self.ctx.campaign) if spec.host_firewall else None
            options = {**spec.options, BRIDGE_NAME_OPTION: wall.bridge} if wall else None
            block, net = self.backend.create_network(name, spec, self.labels(f"{role}-net"), options=options)
            self.networks[role], self.blocks[role] = net, block
            if wall is not None:  # before any container joins; FirewallError (infra_error) rolls its rules back
                wall.install()
                self.firewalls[role] = wall
        return self.networks[role]

    def open_host_port(self, network: str, client: str, target: tuple[str, int]) -> tuple[str, int]:
        """Let service `client` (its fixed address on `network`) alone reach `target`, a port on
        the host's loopback: a relay on the network's host address and one firewall opening
        (host_relay.py), closed at teardown. Returns the (address, port) `client` connects to."""
        self.ensure_network(network)
        wall = self.firewalls.get(network)
        offset = self.backend.topology.addresses.get(client)
        if wall is None or offset is None:
            raise ServiceSpecError(f"no host port is opened for {client!r} on {network!r}: the network has no "
                                   "host firewall or the service no fixed address")
        block = self.blocks[network]
        door = open_host_door(wall, block.gateway, block.host(offset), target, name=f"{self.prefix}-{client}-relay")
        self.doors.append(door)
        return door.relay.address

    def _create_volume(self, role: str, quota_bytes: int | None = None, owner: tuple[int, int] = (0, 0)) -> Any:
        opts = tmpfs_volume_options(quota_bytes, uid=owner[0], gid=owner[1]) if quota_bytes else None
        try:
            self.volumes[role] = self.client.volumes.create(f"{self.prefix}-{role}", labels=self.labels(role),
                                                            driver="local", driver_opts=opts)
        except docker.errors.DockerException as exc:
            raise engine_error(f"create volume {role}", Phase.OPEN)(exc) from exc
        return self.volumes[role]

    # -- services ------------------------------------------------------------------------------

    def _start_service(self, spec: ServiceSpec) -> ServiceEndpoints:
        cfg, cp = self.config, self.config.container_paths
        roles = spec.joined_networks()
        if not roles:
            raise ServiceSpecError(f"service {spec.name!r} joins no network")
        offset = spec.address_offset if spec.address_offset is not None else self.backend.topology.addresses.get(spec.name)
        if offset is None:
            raise ServiceSpecError(f"service {spec.name!r} has no address offset (topology.yaml `addresses`)")
        nets = {role: self.ensure_network(role) for role in roles}
        addresses = {role: self.blocks[role].host(offset) for role in roles}
        self.addresses[spec.name] = addresses
        user = spec.user or cfg.erp_user
        uid, gid = uid_gid(user)
        data = f"{cp.service_data_mount}/{spec.name}"  # the volume root belongs to root: a folder the user owns
        entries = [Entry(spec.name, None, uid, gid, 0o700)]
        entries += [Entry(f"{spec.name}/{f.path}", f.data, uid, gid, f.mode) for f in spec.files]
        binds = {li.name: f"{addresses[li.network]}:{li.port}" for li in spec.listeners}
        argv = spec.expand(python=PYTHON, data=data, binds=binds)
        if spec.name == "erp":
            self.backend.ensure_warm_pool(spec)
        warm = self._warm if self._warm is not None and self.backend.erp_shape(spec) == self._warm.shape else None
        if warm is None and self._warm is not None and spec.name == "erp":
            self._drop_standby()  # it holds the ERP's addresses: gone before the cold start
        container = None
        try:
            if warm is not None:  # the standby ERP made for this shape: its files, then its launch line
                self._warm = None
                container = self.containers[spec.name] = self.containers.pop("erp-standby")
                self._recorders[spec.name] = self._recorders.pop("erp-standby")
                self.volumes[f"{spec.name}-data"] = self.volumes.pop("erp-data")
                container.put_archive(cp.service_data_mount, build_tar(entries))
                launch = json.dumps(argv[argv.index("serve"):]).encode()
                container.put_archive(cp.service_data_mount, build_tar([Entry(f"{spec.name}/launch.json", launch,
                                                                             uid, gid, 0o400)]))
                container.rename(f"{self.prefix}-{spec.name}")
            else:
                volume = self._create_volume(f"{spec.name}-data")

                def created(c: Any, recorder: EventRecorder) -> None:
                    self.containers[spec.name], self._recorders[spec.name] = c, recorder

                container = create_service_container(
                    self.client, spec, image=spec.image or self.backend.service_image(spec.name), user=user,
                    limits=spec.limits or cfg.erp_limits, config=cfg, name=f"{self.prefix}-{spec.name}",
                    labels=self.labels(spec.name), nets=nets, addresses=addresses, volume=volume.name,
                    entrypoint=argv, cgroup_parent=self.backend.service_cgroup_parent, init=self.backend.has_init,
                    on_created=created)
                container.put_archive(cp.service_data_mount, build_tar(entries))
                start_container(container)
            urls = {li.name: f"http://{addresses[li.network]}:{li.port}" for li in spec.listeners} | published_urls(container, spec)
        except docker.errors.DockerException as exc:
            pm = [post_mortem_of(container)] if container is not None else []
            raise ContainerStartError(f"{spec.name} container: {exc}", phase=Phase.SERVICES, post_mortems=pm) from exc
        follower = LogFollower(container, self.ctx.paths.service_log(spec.log_name), watch_ready=spec.ready_line)
        self._followers.append(follower)
        if spec.ready_line:
            self._ready[spec.name] = follower.ready
        follower.start()
        return ServiceEndpoints(spec.name, urls)

    def start_is_expensive(self, spec: ServiceSpec) -> bool:
        return self._warm is None or self.backend.erp_shape(spec) != self._warm.shape

    def wait_service_healthy(self, name: str, *, error: type[ServiceUnhealthy] = ServiceUnhealthy) -> None:
        try:
            super().wait_service_healthy(name, error=error)
        finally:
            if name == "erp":
                self.backend.refill_warm_pool()

    def service_ready(self, name: str) -> threading.Event | None:
        """Set by the service's log follower at its ready line or the end of its output."""
        return self._ready.get(name)

    def service_running(self, name: str) -> bool:
        container = self.containers.get(name)
        if container is None:
            return False
        try:
            container.reload()
        except docker.errors.NotFound:
            return False
        except docker.errors.DockerException as exc:
            raise engine_error(f"inspect {name}", Phase.TURN)(exc) from exc
        return container.status == "running"

    def service_progress(self, name: str) -> dict[str, float] | None:
        """The container's CPU seconds (one-shot stats) and its log's size on the host."""
        out: dict[str, float] = {}
        container = self.containers.get(name)
        if container is not None:
            try:
                stats = self.client.api.stats(container.id, stream=False, one_shot=True)
                out["cpu_s"] = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage", 0) / 1e9
            except (docker.errors.DockerException, requests.exceptions.RequestException, ValueError):
                pass
        try:
            out["log_bytes"] = float(self.ctx.paths.service_log(name).stat().st_size)
        except OSError:
            pass
        return out or None

    def service_post_mortem(self, name: str) -> PostMortem | None:
        container = self.containers.get(name)
        return post_mortem_of(container) if container is not None else None

    def service_death(self, name: str, *, since: float) -> ServiceDeath | None:
        container = self.containers.get(name)
        if container is None:
            return None
        try:
            container.reload()
            state = container.attrs.get("State") or {}
            if state.get("Running"):
                return None
            rec = self._recorders.get(name)
            recorded = rec.seen(until_action="die", timeout_s=3.0) if rec is not None else []
            events = merge_events(recorded, list(self.client.events(
                since=int(since) - 1, until=int(time.time()) + 1, filters={"container": container.id}, decode=True)))
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            log.warning("service_engine_facts_unavailable", service=name, error=str(exc), counts_as="infrastructure")
            return None
        return ServiceDeath.from_engine(name, state, events)

    def stop_service(self, name: str) -> None:
        container = self.containers.get(name)
        if container is None:
            return
        spec = self._services[name][0] if name in self._services else None
        try:
            container.stop(timeout=int(spec.stop_timeout_s if spec else self.config.stop_timeout_s))
        except docker.errors.NotFound:
            pass
        except docker.errors.DockerException as exc:
            raise engine_error(f"stop {name}", Phase.FREEZE)(exc) from exc

    # -- workspace -----------------------------------------------------------------------------

    def _helper(self):
        """The container that keeps the workspace volume mounted from creation to teardown,
        and through which archives are copied in and out: the agent side's holder."""
        return self.agent_namespace()

    def seed_workspace(self, handbook_dir: Path) -> None:
        uid, gid = uid_gid(self.config.agent_user)
        try:
            entries = list(tree_entries(handbook_dir, "handbook", uid=uid, gid=gid))
            self._helper().put_archive(self.config.container_paths.workspace, build_tar(entries))
        except docker.errors.DockerException as exc:
            raise engine_error("copy handbook into workspace", Phase.SERVICES)(exc) from exc

    def copy_workspace(self, dest: Path) -> None:
        try:
            stream, _stat = self._helper().get_archive(self.config.container_paths.workspace + "/.")
            skipped = safe_extract(stream_file(stream), dest, strip=0)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise engine_error("copy workspace out", Phase.FREEZE)(exc) from exc
        if skipped:
            (self.ctx.paths.logs / "workspace-skipped.txt").write_text("\n".join(skipped) + "\n")

    # -- turns ---------------------------------------------------------------------------------

    def prepare_turn(self, n: int) -> None:
        self.turns.prepare(n)

    def run_turn(self, turn: TurnLaunch) -> TurnRun:
        return self.turns.run(turn)

    # -- teardown ------------------------------------------------------------------------------

    def _remove_container(self, role: str) -> str | None:
        c = self.containers.pop(role, None)
        if c is None:
            return None
        try:
            c.remove(force=True, v=False)
        except docker.errors.NotFound:
            pass
        except docker.errors.DockerException as exc:
            return f"container {c.name}: {exc}"
        return None

    def _remove_volume(self, role: str) -> str | None:
        v = self.volumes.pop(role, None)
        if v is None:
            return None
        for attempt in range(5):
            try:
                v.remove(force=True)
                return None
            except docker.errors.NotFound:
                return None
            except docker.errors.APIError as exc:
                if attempt == 4:
                    return f"volume {v.name}: {exc}"
                time.sleep(0.2)  # a just-removed container may still hold it
        return None

    def close(self) -> list[str]:
        self.release_admissions()
        self.backend.refill_warm_pool()
        problems: list[str] = []
        # Nothing still being made or removed. The agent side's failure, if no step met it, is
        # not teardown's (the attempt failed before it needed it): logged; what it made goes below.
        if self._agent_side is not None and (p := self._agent_side.settle()):
            log.warning("agent_side_unused_failed", prefix=self.prefix, problem=p)
        problems += self.turns.settle()
        with ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"{self.prefix}-rm") as pool:  # each a round trip
            problems += [p for p in pool.map(self._remove_container, list(self.containers)) if p]
        for f in self._followers:
            f.join(timeout=5)
        for r in self._recorders.values():
            r.close()
            r.join(timeout=5)
        for role in list(self.volumes):
            if p := self._remove_volume(role):
                problems.append(p)
        while self.doors:
            problems += self.doors.pop().close()
        problems += self._remove_networks()
        return problems

    def _remove_networks(self) -> list[str]:
        """The attempt's networks, each a round trip of its own: side by side, unless one has
        host firewall rules (iptables calls stay one at a time)."""
        def release(role: str) -> None:
            self.backend.pool.release(self.blocks[role])

        if self.firewalls or len(self.networks) < 2:
            return remove_networks(self.networks, self.firewalls, release)
        roles = list(self.networks)
        with ThreadPoolExecutor(max_workers=len(roles), thread_name_prefix=f"{self.prefix}-net") as pool:
            found = list(pool.map(lambda role: remove_networks({role: self.networks[role]}, {}, release), roles))
        for role in roles:
            self.networks.pop(role, None)
        return [p for problems in found for p in problems]
