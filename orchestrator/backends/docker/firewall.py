"""Host firewall rules for the attempt bridges that hold a host address and carry a container
with a route out (topology.yaml `host_firewall: true`: the model gateway's egress and
gateway-control networks).

Why: a bridge network's host-side address is a host address like any other, so a container on it
reaches every host service that listens on all addresses (0.0.0.0), whatever the network's
`internal` flag says. The agent's own network avoids this by having no host address at all
(`inhibit_ipv4`); the gateway's networks cannot: the egress bridge is its route out and the
gateway-control bridge is where the host reaches its control port.

How: the network is created with a fixed bridge interface name (`bridge_name`, derived from the
network's name, at most 15 characters), and two rules go at the top of the host's INPUT chain,
for IPv4 and (when the host has IPv6) IPv6:

    -i <bridge> -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT     replies to the host's
                                                                         own connections (the
                                                                         orchestrator -> control port)
    -i <bridge> -j DROP                                                  anything else to any
                                                                         host address

Traffic between containers on the bridge and forwarded traffic (the gateway's upstream calls)
never passes INPUT, so it is unaffected. One door may be opened on purpose (`open_port`): a
model server the user runs on the host's loopback, reached through a relay on the bridge's host
address (host_relay.py), admits the gateway's address to that one port and nothing else:

    -s <gateway>/32 -d <bridge address>/32 -p tcp --dport <port> -i <bridge> -j ACCEPT
    -d <bridge address>/32 -p tcp --dport <port> -j DROP                 from any other source
                                                                         or interface Each rule carries the comment `tag()`, which names the
network (hence the attempt) and a hash of the campaign, so `orchestrate reap` finds rules whose
network is gone (`list_tagged_rules`, `TaggedRule.delete`).

If the rules cannot be installed (no iptables, no privilege, the engine on another host so the
bridge is not here) `HostFirewall.install` raises `FirewallError`, an infrastructure error: the
attempt never runs with the bridge open.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import InfraError, Phase

BRIDGE_NAME_OPTION = "com.docker.network.bridge.name"
TAG_PREFIX = "pb-fw"
CHAIN = "INPUT"
LOCK_WAIT_S = "10"  # iptables -w: docker and other orchestrators take the xtables lock too
RUN_TIMEOUT_S = 30.0
MAX_COMMENT = 255  # the comment match's limit
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")  # iptables lives here; a user's PATH may lack them


class FirewallError(InfraError):
    """The host firewall rules of an attempt bridge could not be installed (or listed)."""


def bridge_name(network: str) -> str:
    """The fixed bridge interface name of `network` (15 characters, the kernel's limit)."""
    return "pbfw" + hashlib.sha256(network.encode()).hexdigest()[:11]


def campaign_key(campaign: str) -> str:
    """A short, comment-safe stand-in for a campaign name (campaign names are free text)."""
    return hashlib.sha256(campaign.encode()).hexdigest()[:8]


def tag(network: str, campaign: str) -> str:
    """The comment every rule of `network` carries: `pb-fw:<campaign key>:<network name>`."""
    return f"{TAG_PREFIX}:{campaign_key(campaign)}:{network}"


def _binary(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *SBIN])
    return shutil.which(name, path=path)


def host_has_ipv6() -> bool:
    """Whether the host runs IPv6 at all (then the rules are installed for IPv6 too)."""
    try:
        return bool(Path("/proc/net/if_inet6").read_text().strip())
    except OSError:
        return False


def families() -> list[str]:
    """The iptables commands whose INPUT chain gets the rules: iptables, and ip6tables on an IPv6 host."""
    return ["iptables", "ip6tables"] if host_has_ipv6() else ["iptables"]


def _run(command: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    path = _binary(command)
    if path is None:
        raise FirewallError(f"{command} not found (the host firewall of the gateway's bridges needs it)",
                            phase=Phase.OPEN)
    try:
        return subprocess.run([path, "-w", LOCK_WAIT_S, *args], capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FirewallError(f"{command} {' '.join(args[:2])}: {exc}", phase=Phase.OPEN) from exc


def _absent(proc: subprocess.CompletedProcess[str]) -> bool:
    """True when `-D` failed only because the rule is not there (someone removed it first)."""
    text = (proc.stderr or "").lower()
    return proc.returncode == 1 and ("does a matching rule exist" in text or "no chain/target/match" in text)


@dataclass(frozen=True)
class TaggedRule:
    """One rule of ours found in a host INPUT chain."""

    command: str  # iptables | ip6tables
    network: str
    campaign_key: str
    spec: tuple[str, ...]  # the rule as `-S` prints it, without `-A INPUT`

    def delete(self) -> bool:
        """Delete this rule; False when it was already gone. Raises FirewallError otherwise."""
        proc = _run(self.command, ["-D", CHAIN, *self.spec])
        if proc.returncode == 0:
            return True
        if _absent(proc):
            return False
        raise FirewallError(f"{self.command} -D {CHAIN} ({self.network}): {proc.stderr.strip()}", phase=Phase.TEARDOWN)


def _parse_rules(command: str, text: str) -> list[TaggedRule]:
    out = []
    for line in text.splitlines():
        words = shlex.split(line)
        if words[:2] != ["-A", CHAIN] or "--comment" not in words:
            continue
        comment = words[words.index("--comment") + 1]
        parts = comment.split(":", 2)
        if len(parts) != 3 or parts[0] != TAG_PREFIX:
            continue
        out.append(TaggedRule(command, parts[2], parts[1], tuple(words[2:])))
    return out


def list_tagged_rules() -> list[TaggedRule]:
    """Every rule of ours in the host's INPUT chains (IPv4, and IPv6 on an IPv6 host).
    Raises FirewallError when a chain cannot be listed (no iptables, no privilege)."""
    rules: list[TaggedRule] = []
    for command in families():
        proc = _run(command, ["-S", CHAIN])
        if proc.returncode != 0:
            raise FirewallError(f"{command} -S {CHAIN}: {proc.stderr.strip()}", phase=Phase.OPEN)
        rules += _parse_rules(command, proc.stdout)
    return rules


@dataclass(frozen=True)
class HostFirewall:
    """The INPUT rules of one attempt bridge: new connections from it to the host are dropped."""

    network: str
    campaign: str

    @property
    def bridge(self) -> str:
        return bridge_name(self.network)

    @property
    def tag(self) -> str:
        return tag(self.network, self.campaign)

    def rule_specs(self) -> list[list[str]]:
        """The rules in chain order (the ACCEPT of replies above the DROP)."""
        comment = ["-m", "comment", "--comment", self.tag]
        return [
            ["-i", self.bridge, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", *comment, "-j", "ACCEPT"],
            ["-i", self.bridge, *comment, "-j", "DROP"],
        ]

    def installed(self) -> list[TaggedRule]:
        """Our rules of this network present now."""
        return [r for r in list_tagged_rules() if r.network == self.network and r.campaign_key == campaign_key(self.campaign)]

    def install(self) -> None:
        """Put the rules at the top of INPUT (replacing leftovers of an earlier run of the same
        attempt) and check they are there; on any failure remove what was put and raise
        FirewallError. Call it after the network exists and before any container joins it."""
        if len(self.tag) > MAX_COMMENT:
            raise FirewallError(f"network name too long for a rule comment: {self.network!r}", phase=Phase.OPEN)
        if not Path("/sys/class/net", self.bridge).exists():
            # The engine runs elsewhere (another host or namespace), or ignored the name option:
            # rules here would guard nothing.
            raise FirewallError(f"bridge {self.bridge} of network {self.network} is not on this host", phase=Phase.OPEN)
        try:
            self.remove(strict=True)
            for command in families():
                # Insert the DROP first, then the ACCEPT above it: no moment lets new connections in.
                for spec in reversed(self.rule_specs()):
                    proc = _run(command, ["-I", CHAIN, "1", *spec])
                    if proc.returncode != 0:
                        raise FirewallError(f"{command} -I {CHAIN} ({self.bridge}): {proc.stderr.strip()}",
                                            phase=Phase.OPEN)
            self._check()
        except FirewallError:
            self.remove()
            raise

    def opening_specs(self, source: str, dest: str, port: int) -> list[list[str]]:
        """The rules of one opening (`open_port`), in chain order: the ACCEPT above the DROP."""
        comment = ["-m", "comment", "--comment", self.tag]
        match = ["-d", f"{dest}/32", "-p", "tcp", "-m", "tcp", "--dport", str(port)]
        return [
            ["-s", f"{source}/32", *match, "-i", self.bridge, *comment, "-j", "ACCEPT"],
            [*match, *comment, "-j", "DROP"],
        ]

    def open_port(self, source: str, dest: str, port: int) -> None:
        """Admit new TCP connections from `source` (a container on this bridge) to the host's
        `dest`:`port` (this bridge's host address), and drop every other packet to that port,
        whichever interface it arrives on (another bridge, docker0, the host's own): one door
        for one client (host_relay.py). IPv4 only (the attempt networks have no IPv6). The rules
        carry this network's tag, so they go with the others (`remove`, `orchestrate reap`).
        On any failure what was put is removed and FirewallError is raised."""
        specs = self.opening_specs(source, dest, port)
        try:
            for spec in reversed(specs):  # the DROP first, then the ACCEPT above it
                proc = _run("iptables", ["-I", CHAIN, "1", *spec])
                if proc.returncode != 0:
                    raise FirewallError(f"iptables -I {CHAIN} ({self.bridge} port {port}): {proc.stderr.strip()}",
                                        phase=Phase.SERVICES)
            proc = _run("iptables", ["-S", CHAIN])
            mine = [sorted(r.spec) for r in _parse_rules("iptables", proc.stdout) if r.network == self.network]
            if proc.returncode != 0 or any(sorted(spec) not in mine for spec in specs):
                raise FirewallError(f"iptables: the opening of {dest}:{port} on {self.bridge} is not as installed",
                                    phase=Phase.SERVICES)
        except FirewallError:
            self.close_port(source, dest, port)
            raise

    def close_port(self, source: str, dest: str, port: int) -> list[str]:
        """Delete the rules of one opening; return problems (a rule already gone is none)."""
        problems: list[str] = []
        for spec in self.opening_specs(source, dest, port):
            try:
                TaggedRule("iptables", self.network, campaign_key(self.campaign), tuple(spec)).delete()
            except FirewallError as exc:
                problems.append(str(exc))
        return problems

    def _check(self) -> None:
        want = [[*spec] for spec in self.rule_specs()]
        for command in families():
            proc = _run(command, ["-S", CHAIN])
            if proc.returncode != 0:
                raise FirewallError(f"{command} -S {CHAIN}: {proc.stderr.strip()}", phase=Phase.OPEN)
            mine = [list(r.spec) for r in _parse_rules(command, proc.stdout) if r.network == self.network]
            # `-S` prints the match options in its own order: compare as sets of words per rule.
            if sorted(map(sorted, mine)) != sorted(map(sorted, want)) or "ACCEPT" not in mine[0]:
                raise FirewallError(f"{command}: the rules of {self.bridge} are not as installed: {mine}", phase=Phase.OPEN)

    def remove(self, *, strict: bool = False) -> list[str]:
        """Delete every rule of this network (all families); return problems (raise if `strict`)."""
        problems: list[str] = []
        try:
            rules = self.installed()
        except FirewallError as exc:
            if strict:
                raise
            return [f"firewall rules of {self.network}: {exc}"]
        for rule in rules:
            try:
                rule.delete()
            except FirewallError as exc:
                if strict:
                    raise
                problems.append(str(exc))
        return problems


def remove_networks(networks: dict[str, Any], firewalls: dict[str, HostFirewall],
                    release: Callable[[str], None]) -> list[str]:
    """Remove an attempt's networks (role -> docker network; emptied), each network's firewall
    rules after it (`firewalls`, emptied); `release(role)` once a network is removed. Return
    problems. A network the engine refuses to remove may still hold a container, so its rules
    stay: `orchestrate reap` removes them once the network is gone."""
    import docker.errors

    problems: list[str] = []
    for role, net in list(networks.items()):
        wall = firewalls.pop(role, None)
        try:
            net.remove()
        except docker.errors.NotFound:
            pass
        except docker.errors.DockerException as exc:
            problems.append(f"network {net.name}: {exc}" + (" (its firewall rules stay until reap)" if wall else ""))
            wall = None
        else:
            release(role)
        networks.pop(role, None)
        if wall is not None:
            problems += wall.remove()
    return problems
