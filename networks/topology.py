"""Load `topology.yaml`: which networks an attempt has, their options, who joins which."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

TOPOLOGY_FILE = Path(__file__).with_name("topology.yaml")


@dataclass(frozen=True)
class NetworkSpec:
    """One network of an attempt."""

    role: str  # attempt | control | egress
    build: bool
    purpose: str
    internal: bool
    options: dict[str, str]
    enable_ipv6: bool
    members: tuple[str, ...]
    allowlist: tuple[str, ...] = ()
    # The host drops new connections arriving from this network's bridge (its host address would
    # otherwise open every host service listening on all addresses): orchestrator/backends/docker/firewall.py.
    host_firewall: bool = False


@dataclass(frozen=True)
class Topology:
    """Networks, listeners and fixed address offsets of one attempt."""

    networks: dict[str, NetworkSpec]
    listeners: dict[str, dict[str, str]]
    addresses: dict[str, int] = field(default_factory=dict)

    def built(self) -> list[NetworkSpec]:
        """The networks the runtime creates today (in file order)."""
        return [n for n in self.networks.values() if n.build]

    def networks_of(self, member: str) -> list[str]:
        """Roles of the built networks `member` joins."""
        return [n.role for n in self.built() if member in n.members]


class TopologyError(ValueError):
    """topology.yaml does not describe a usable topology."""


def _parse(data: dict[str, Any]) -> Topology:
    nets: dict[str, NetworkSpec] = {}
    for role, raw in (data.get("networks") or {}).items():
        try:
            nets[role] = NetworkSpec(
                role=role,
                build=bool(raw["build"]),
                purpose=str(raw.get("purpose", "")),
                internal=bool(raw["internal"]),
                options={str(k): str(v) for k, v in (raw.get("options") or {}).items()},
                enable_ipv6=bool(raw.get("enable_ipv6", False)),
                members=tuple(raw.get("members") or ()),
                allowlist=tuple(raw.get("allowlist") or ()),
                host_firewall=bool(raw.get("host_firewall", False)),
            )
        except KeyError as exc:
            raise TopologyError(f"network {role!r} lacks key {exc.args[0]!r}") from None
    for role in ("attempt", "control"):
        if role not in nets or not nets[role].build:
            raise TopologyError(f"the {role!r} network must be declared and built")
    if "agent" in nets["control"].members:
        raise TopologyError("the agent must never join the control network")
    if not nets["attempt"].internal:
        raise TopologyError("the attempt network must be internal")
    listeners = {k: dict(v) for k, v in (data.get("listeners") or {}).items()}
    for member, binds in listeners.items():
        for api, role in binds.items():
            if role not in nets:
                raise TopologyError(f"listener {member}.{api} names unknown network {role!r}")
    return Topology(nets, listeners, {k: int(v) for k, v in (data.get("addresses") or {}).items()})


@lru_cache(maxsize=4)
def load_topology(path: Path = TOPOLOGY_FILE) -> Topology:
    """Parse and check topology.yaml (cached)."""
    with open(path, encoding="utf-8") as fh:
        return _parse(yaml.safe_load(fh) or {})
