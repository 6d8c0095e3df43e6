"""How a service container of the docker backend is made: created on its first network with a
fixed address, connected to its other networks with fixed addresses (API 1.41 joins one network
at create), with its private data volume; and the warm pool's slots (warm_pool.py), which make
the ERP's container the same way before its attempt exists.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import docker.errors

from networks.topology import NetworkSpec
from orchestrator.backends.docker.containers import NO_IPV6, EventRecorder, hardening, start_container
from orchestrator.backends.docker.warm_pool import ErpShape, WarmPool, WarmSlot, pool_labels, standby_argv, wait_for_standby
from orchestrator.backends.services import ServiceSpec


def create_service_container(client: Any, spec: ServiceSpec, *, image: str, user: str, limits: Any, config: Any,
                             name: str, labels: dict[str, str], nets: Mapping[str, Any],
                             addresses: Mapping[str, str], volume: str, entrypoint: list[str],
                             cgroup_parent: str | None, init: bool,
                             on_created: Callable[[Any, EventRecorder], None]) -> Any:
    """Create (not start) a service container on its networks (`nets`: role -> network, in the
    spec's order) at `addresses`, its data volume mounted. `on_created` gets the container and
    its started event recorder before anything else can fail, so that the caller removes it."""
    cp = config.container_paths
    first, *others = list(nets)

    def aliases(role: str) -> list[str] | None:
        return list(spec.aliases) if role == "attempt" and spec.aliases else None

    container = client.containers.create(
        image,
        entrypoint=entrypoint,
        command=[],
        name=name,
        hostname=spec.name,
        labels=labels,
        environment=dict(spec.env),
        working_dir=cp.service_data_mount,
        volumes={volume: {"bind": cp.service_data_mount, "mode": "rw"}},
        tmpfs={cp.tmp: f"rw,nosuid,nodev,size={config.tmpfs_size}"},
        sysctls=NO_IPV6,
        network=nets[first].name,
        networking_config={nets[first].name: client.api.create_endpoint_config(
            ipv4_address=addresses[first], aliases=aliases(first))},
        ports=spec.port_bindings(),  # host loopback only, and only what the spec publishes
        cgroup_parent=cgroup_parent,  # weighs one host process (config.py)
        **hardening(limits, user, init=init),
    )
    recorder = EventRecorder(client, container.id, container.name)
    recorder.start()
    on_created(container, recorder)
    for role in others:
        nets[role].connect(container, ipv4_address=addresses[role], aliases=aliases(role))
    return container


def make_warm_slot(backend: Any, slot_id: str, shape: ErpShape, spec: ServiceSpec) -> WarmSlot:
    """A slot of the warm pool: the topology's built networks on fresh subnets and the ERP's
    container on them, started in standby (warm_pool.py). Whatever was made is removed when a
    step fails (and the step's error raised)."""
    cfg = backend.config
    campaign = cfg.campaign
    slot = WarmSlot(slot_id=slot_id, shape=shape)
    try:
        for net_spec in backend.topology.built():
            _slot_network(backend, slot, net_spec)
        slot.volume = backend.client.volumes.create(f"pb-{slot_id}-erp-data", driver="local",
                                                    labels=pool_labels(campaign, slot_id, "erp-data"))
        nets = {role: slot.networks[role] for role in shape.networks}
        addresses = {role: slot.blocks[role].host(shape.offset) for role in shape.networks}

        def created(container: Any, recorder: EventRecorder) -> None:
            slot.erp, slot.recorder = container, recorder

        create_service_container(
            backend.client, spec, image=shape.image, user=shape.user, limits=shape.limits, config=cfg,
            name=f"pb-{slot_id}-erp", labels=pool_labels(campaign, slot_id, "erp"), nets=nets,
            addresses=addresses, volume=slot.volume.name,
            entrypoint=standby_argv(f"{cfg.container_paths.service_data_mount}/{spec.name}"),
            cgroup_parent=backend.service_cgroup_parent, init=backend.has_init, on_created=created)
        start_container(slot.erp)
        if not wait_for_standby(slot.erp):
            raise RuntimeError(f"the standby ERP of {slot_id} ended before standing by")
    except BaseException:
        remove_warm_slot(backend, slot)
        raise
    return slot


def _slot_network(backend: Any, slot: WarmSlot, net_spec: NetworkSpec) -> None:
    if net_spec.host_firewall:  # never: the built networks have none (a slot would need its rules)
        raise RuntimeError(f"network {net_spec.role!r} has host firewall rules: not made ahead")
    block, net = backend.create_network(f"pb-{slot.slot_id}-{net_spec.role}", net_spec,
                                        pool_labels(backend.config.campaign, slot.slot_id, f"{net_spec.role}-net"))
    slot.networks[net_spec.role], slot.blocks[net_spec.role] = net, block


def remove_warm_slot(backend: Any, slot: WarmSlot) -> list[str]:
    """Remove an untaken slot's objects (container, volume, networks); never raises."""
    problems: list[str] = []
    if slot.recorder is not None:
        slot.recorder.close()
    for what, obj, remove in (("container", slot.erp, lambda o: o.remove(force=True, v=False)),
                              ("volume", slot.volume, lambda o: o.remove(force=True))):
        if obj is None:
            continue
        try:
            remove(obj)
        except docker.errors.NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 — reported; the reaper removes what is left
            problems.append(f"{what} {getattr(obj, 'name', '?')}: {exc}")
    for role, net in list(slot.networks.items()):
        try:
            net.remove()
        except docker.errors.NotFound:
            pass
        except Exception as exc:  # noqa: BLE001
            problems.append(f"network {net.name}: {exc}")
            continue
        backend.pool.release(slot.blocks[role])
    return problems



def make_erp_pool(backend: Any, template: ServiceSpec) -> WarmPool | None:
    """The backend's pool of ERP slots made ahead (warm_pool.py) for ERPs declared like
    `template` (`config.warm_erp_slots` of them); None when that ERP cannot stand by."""
    shape = backend.erp_shape(template)
    if shape is None:
        return None
    return WarmPool(backend.config.warm_erp_slots, shape,
                    lambda slot_id, sh: make_warm_slot(backend, slot_id, sh, template),
                    lambda slot: remove_warm_slot(backend, slot), config=backend.config)


class WarmPoolOwner:
    """The docker backend's side of the warm pool (warm_pool.py)."""

    config: Any
    topology: Any
    warm_pool: WarmPool | None
    pool_lock: Any
    service_image: Callable[[str], str]  # the backend's image of a service that declares none

    def ensure_warm_pool(self, erp: ServiceSpec) -> None:
        """With `config.warm_erp_slots`, start making ERP slots for ERPs declared like `erp`
        (warm_pool.py); the first ERP an attempt starts calls this, so later attempts find one."""
        with self.pool_lock:
            if self.config.warm_erp_slots > 0 and self.warm_pool is None:
                # Only what a container is made with: not the attempt's files or health token.
                self.warm_pool = make_erp_pool(self, dataclasses.replace(erp, files=(), health=None))

    def refill_warm_pool(self) -> None:
        """An attempt's ERP is up (or it closes): make the slots it may have taken again."""
        if self.warm_pool is not None:
            self.warm_pool.refill()

    def erp_shape(self, spec: ServiceSpec) -> ErpShape | None:
        """What a standby ERP must have been made for to serve `spec` (warm_pool.py)."""
        offset = spec.address_offset if spec.address_offset is not None else self.topology.addresses.get(spec.name)
        if spec.name != "erp" or offset is None:
            return None
        return ErpShape.of(spec, image=spec.image or self.service_image(spec.name), user=spec.user or self.config.erp_user,
                           limits=spec.limits or self.config.erp_limits, offset=offset)

    def shutdown(self) -> list[str]:
        """The run is over: remove the warm pool's untaken slots."""
        pool, self.warm_pool = self.warm_pool, None
        return pool.close() if pool is not None else []

