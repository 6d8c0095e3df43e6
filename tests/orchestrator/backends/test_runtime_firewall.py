"""The host firewall of the gateway's bridges (orchestrator/backends/docker/firewall.py) on the
real engine and the real iptables: a container on the egress or gateway-control network reaches
no host address (a host canary on 0.0.0.0), while an ordinary bridge reaches it and the host
still reaches a listener on gateway-control; the rules exist while the network does, are gone
after the sandbox closes, and `reap` removes the rules whose network is gone (only those)."""
from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import threading
import time
import uuid
from types import SimpleNamespace

import httpx
import pytest
from escape_support import host_ipv4_addresses
from runtime_support import TEST_CAMPAIGN, leftovers, probe_from

pytestmark = [pytest.mark.docker]

PYTHON = "/opt/venv/bin/python"

# Probes TCP targets (argv[2:]), prints the result, then serves HTTP on argv[1] (ip:port).
PROBE_THEN_SERVE = """
import http.server, json, socket, sys
out = {}
for target in sys.argv[2:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket(); s.settimeout(2.0)
    try:
        s.connect((host, int(port))); out[target] = "open"
    except OSError as exc:
        out[target] = type(exc).__name__
    finally:
        s.close()
print(json.dumps(out), flush=True)
ip, port = sys.argv[1].rsplit(":", 1)
http.server.HTTPServer((ip, int(port)), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


@pytest.fixture()
def canary():
    """A TCP listener on 0.0.0.0 (every host address) recording who connected."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()
    hits: list[str] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = srv.accept()
            except OSError:
                continue
            hits.append(addr[0])
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield SimpleNamespace(port=srv.getsockname()[1], hits=hits)
    stop.set()
    t.join(2)
    srv.close()


def _labels(role: str, owner=None, campaign: str = TEST_CAMPAIGN) -> dict[str, str]:
    from orchestrator.labels import attempt_labels

    return attempt_labels(campaign, f"pytest-fw-{uuid.uuid4().hex[:6]}", role, owner)


def _rules_of(network: str) -> list:
    from orchestrator.backends.docker.firewall import list_tagged_rules

    return [r for r in list_tagged_rules() if r.network == network]


def _iptables_input(command: str = "iptables") -> str:
    return subprocess.run([command, "-S", "INPUT"], capture_output=True, text=True, check=True).stdout


def test_bridge_names_fit_and_differ() -> None:
    from orchestrator.backends.docker.firewall import bridge_name

    a = "pb-claude-code--payment-run-s0-r3-e64ee2fd"
    names = {bridge_name(f"{a}-egress"), bridge_name(f"{a}-gateway-control"), bridge_name(f"{a}x-egress")}
    assert len(names) == 3 and all(len(n) <= 15 and n.startswith("pbfw") for n in names)
    assert bridge_name(f"{a}-egress") == bridge_name(f"{a}-egress")  # derived, so reap and teardown agree


def test_only_the_gateway_networks_are_firewalled_and_the_agents_are_unchanged() -> None:
    from networks.topology import load_topology

    nets = load_topology().networks
    # (and the web UI's publish network of human attempts: not internal, so its bridge has a host address)
    assert {r for r, n in nets.items() if n.host_firewall} == {"egress", "gateway-control", "web"}
    # The agent's network keeps its own protection (no host address at all), the ERP's control
    # network stays as it was.
    assert nets["attempt"].internal and nets["attempt"].options == {"com.docker.network.bridge.inhibit_ipv4": "true"}
    assert nets["control"].internal and nets["control"].options == {}


def test_no_bridge_here_is_an_infra_error() -> None:
    """Rules for a bridge that is not on this host would guard nothing: refused, nothing installed."""
    from orchestrator.backends.docker.firewall import FirewallError, HostFirewall
    from orchestrator.errors import InfraError

    wall = HostFirewall(f"pb-pytest-fw-{uuid.uuid4().hex[:6]}-egress", TEST_CAMPAIGN)
    with pytest.raises(FirewallError, match="not on this host") as info:
        wall.install()
    assert isinstance(info.value, InfraError) and info.value.kind == "infra_error"
    assert _rules_of(wall.network) == []


def test_no_iptables_fails_the_network_and_leaves_nothing(backend, client, tmp_path, monkeypatch) -> None:
    """Without iptables the attempt's egress network is refused (infra_error) and removed at close."""
    from orchestrator.backends.docker import firewall as docker_firewall
    from orchestrator.backends.docker.firewall import FirewallError
    from orchestrator.backends.docker.sandbox import DockerSandbox

    sb = DockerSandbox(backend, _context(tmp_path))
    monkeypatch.setattr(docker_firewall, "SBIN", ())
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no iptables anywhere
    with pytest.raises(FirewallError, match="iptables not found"):
        sb.ensure_network("egress")
    monkeypatch.undo()
    assert sb.close() == []
    assert not [x for x in leftovers(client, sb.prefix)]


def _context(tmp_path):
    from orchestrator.backends.base import AttemptContext
    from orchestrator.cells import Cell
    from orchestrator.identity import AttemptIdentity
    from orchestrator.paths import AttemptPaths

    paths = AttemptPaths.for_identity(tmp_path, "t", AttemptIdentity.of(Cell("null", "fw"), 0, 0, 1))
    paths.prepare()
    return AttemptContext(f"pytest-fw-{uuid.uuid4().hex[:6]}", TEST_CAMPAIGN, paths)


def test_gateway_bridges_closed_to_the_host_and_rules_gone_after_teardown(
        client, agent_image, backend, tmp_path, canary) -> None:
    from orchestrator.backends.docker.sandbox import DockerSandbox

    sb = DockerSandbox(backend, _context(tmp_path))  # no netns/helper: only the networks matter here
    made: list = []
    try:
        egress, control = sb.ensure_network("egress"), sb.ensure_network("gateway-control")
        eblock, cblock = sb.blocks["egress"], sb.blocks["gateway-control"]
        for role in ("egress", "gateway-control"):
            wall = sb.firewalls[role]
            # The engine named the bridge as asked, and it holds the network's host address.
            addr = subprocess.run(["ip", "-4", "addr", "show", "dev", wall.bridge], capture_output=True, text=True)
            assert sb.blocks[role].gateway in addr.stdout, addr
            for command in ("iptables", "ip6tables"):
                mine = [line for line in _iptables_input(command).splitlines() if wall.tag in line]
                assert len(mine) == 2 and "ESTABLISHED" in mine[0] and mine[0].endswith("ACCEPT"), mine
                assert mine[1].endswith("-j DROP") and f"-i {wall.bridge}" in mine[1], mine

        port = canary.port
        host_addrs = sorted({*host_ipv4_addresses().values(), eblock.gateway, cblock.gateway})
        targets = [f"{ip}:{port}" for ip in host_addrs]
        # Positive control: from an ordinary bridge the canary answers (docker0 and the bridge).
        from networks.topology import NetworkSpec

        plain = NetworkSpec("plain", True, "positive control", False, {}, False, ("x",))
        pblock, plain_net = backend.create_network(f"{sb.prefix}-plain", plain, _labels("plain-net"))
        made.append(plain_net)
        seen = probe_from(client, agent_image, plain_net.name, [f"{pblock.gateway}:{port}"], _labels("probe"))
        assert seen[f"{pblock.gateway}:{port}"] == "open", seen

        # From the egress network (which has a default route): no host address answers.
        got = probe_from(client, agent_image, egress.name, targets, _labels("probe"))
        assert got["default_route"] is True, got  # so the host addresses beyond the bridge are tried too
        assert [t for t in targets if got[t] == "open"] == [], got

        # On gateway-control: the host reaches a listener there (replies pass), while the same
        # container reaches no host address.
        ip = cblock.host(3)
        c = client.containers.create(
            agent_image, entrypoint=[PYTHON, "-c", PROBE_THEN_SERVE, f"{ip}:8081", *targets], command=[],
            network=control.name, networking_config={control.name: client.api.create_endpoint_config(ipv4_address=ip)},
            labels=_labels("probe"), user="1000:1000", working_dir="/tmp")
        made.insert(0, c)
        c.start()
        deadline = time.monotonic() + 120
        while True:
            try:
                r = httpx.get(f"http://{ip}:8081/", timeout=2, trust_env=False)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, c.logs().decode(errors="replace")
                time.sleep(0.5)
        assert r.status_code == 200
        probe = json.loads(c.logs(stdout=True, stderr=False).decode().strip().splitlines()[0])
        assert [t for t in targets if probe[t] == "open"] == [], probe
        # The canary saw the positive control and nothing else.
        assert canary.hits and all(ipaddress.ip_address(h) in ipaddress.ip_network(pblock.subnet) for h in canary.hits), canary.hits
    finally:
        for obj in made:
            obj.remove(force=True) if hasattr(obj, "exec_run") else obj.remove()
        walls = dict(sb.firewalls)
        problems = sb.close()
    assert problems == []
    assert sb.firewalls == {} and sb.networks == {}
    for wall in walls.values():
        assert _rules_of(wall.network) == [] and wall.tag not in _iptables_input() + _iptables_input("ip6tables")
        assert subprocess.run(["ip", "link", "show", wall.bridge], capture_output=True).returncode != 0
    assert not leftovers(client, sb.prefix)


def test_reap_removes_rules_whose_network_is_gone(client, backend) -> None:
    """Three firewalled networks: a live owner's (kept with its rules), one removed behind the
    runtime's back (its rules are leftovers: removed), a dead owner's (network and rules removed
    in one pass). Another campaign's leftover rules are untouched by a campaign-scoped reap."""
    import sys

    from networks.topology import load_topology
    from orchestrator import labels as L
    from orchestrator.backends.docker.firewall import BRIDGE_NAME_OPTION, HostFirewall
    from orchestrator.backends.docker.reaper import reap

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    dead = L.Owner(proc.pid, L.process_start_time(proc.pid) or "1", L.Owner.current().boot, L.Owner.current().host)
    proc.wait()
    assert L.owner_state(dead.labels()) is L.OwnerState.DEAD
    campaign, other = f"{TEST_CAMPAIGN}-fw-{uuid.uuid4().hex[:6]}", f"{TEST_CAMPAIGN}-fwo-{uuid.uuid4().hex[:6]}"
    spec = load_topology().networks["egress"]
    nets: dict[str, tuple] = {}
    try:
        for who, owner, camp in (("live", None, campaign), ("gone", None, campaign), ("dead", dead, campaign),
                                 ("other", None, other)):
            name = f"pb-pytest-fw-{uuid.uuid4().hex[:6]}-{who}"
            wall = HostFirewall(name, camp)
            _, net = backend.create_network(name, spec, _labels("egress-net", owner, camp),
                                            options={BRIDGE_NAME_OPTION: wall.bridge})
            nets[who] = (net, wall)
            wall.install()
            assert len(_rules_of(name)) == 4  # IPv4 and IPv6, ACCEPT and DROP
        for who in ("gone", "other"):  # the network removed, the rules not (a crash in between)
            nets[who][0].remove()

        dry = reap(client, campaign=campaign, dry_run=True)
        assert len(_rules_of(nets["gone"][1].network)) == 4  # a dry run removes nothing
        dry_rules = [x for x in dry.removed if x.startswith("firewall rule")]
        assert len(dry_rules) == 4 and all(nets["gone"][1].network in x for x in dry_rules), dry.removed
        report = reap(client, campaign=campaign)
        assert not report.failed, report
        # The dead owner's network goes in this pass, and its rules with it (the networks still
        # there are listed after the engine objects are reaped).
        assert [x for x in report.removed if x.startswith("network") and nets["dead"][1].network in x], report.removed
        rules = sorted(x for x in report.removed if x.startswith("firewall rule"))
        assert len(rules) == 8, report.removed
        assert {x.split()[3] for x in rules} == {nets["gone"][1].network, nets["dead"][1].network}
        assert {x.split()[2] for x in rules} == {"iptables", "ip6tables"}
        assert _rules_of(nets["gone"][1].network) == [] and _rules_of(nets["dead"][1].network) == []
        assert len(_rules_of(nets["live"][1].network)) == 4  # a live owner's network keeps its rules
        assert len(_rules_of(nets["other"][1].network)) == 4  # another campaign's: not this reap's
        assert reap(client, campaign=other).removed and _rules_of(nets["other"][1].network) == []
    finally:
        for net, wall in nets.values():
            try:
                net.remove()
            except Exception:  # noqa: BLE001 — already removed by the test or the reap
                pass
            wall.remove()
    assert not [n for n in (net.name for net, _ in nets.values()) if _rules_of(n)]
    assert not leftovers(client, "pb-pytest-fw-")
