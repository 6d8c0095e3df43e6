"""The door to a model on the host's loopback (`DockerSandbox.open_host_port`: host_relay.py and
`HostFirewall.open_port`) on the real engine and the real iptables, without an attempt: an
egress network, a TCP service on the host's 127.0.0.1 standing for the model server, and probe
containers at fixed addresses of that network. The gateway's address reaches the service through
the door; any other address of the same network does not, nor an ordinary bridge; the door is
gone with the sandbox, and after a crash `reap` removes its rules with the network's."""
from __future__ import annotations

import json
import socket
import subprocess
import threading
import uuid
from typing import Any

import pytest
from runtime_support import PROBE, TEST_CAMPAIGN, leftovers

pytestmark = [pytest.mark.docker]


@pytest.fixture()
def model_server():
    """A TCP service on the host's 127.0.0.1 that answers every connection with a greeting."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    hits: list[str] = []

    def serve() -> None:
        while True:
            try:
                conn, addr = srv.accept()
            except OSError:
                return
            hits.append(addr[0])
            conn.sendall(b"model here\n")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1], hits
    srv.close()


def _context(tmp_path, campaign: str = TEST_CAMPAIGN):
    from orchestrator.backends.base import AttemptContext
    from orchestrator.cells import Cell
    from orchestrator.identity import AttemptIdentity
    from orchestrator.paths import AttemptPaths

    paths = AttemptPaths.for_identity(tmp_path, "t", AttemptIdentity.of(Cell("null", "door"), 0, 0, 1))
    paths.prepare()
    return AttemptContext(f"pytest-door-{uuid.uuid4().hex[:6]}", campaign, paths)


def _rules(network: str) -> list[Any]:
    from orchestrator.backends.docker.firewall import list_tagged_rules

    return [r for r in list_tagged_rules() if r.network == network]


def probe_at(client: Any, image: str, network: str, ip: str | None, targets: list[str], labels: dict[str, str]) -> dict:
    """TCP connects to `targets` from a container on `network` at address `ip` (None: any)."""
    kw: dict[str, Any] = {"network": network}
    if ip is not None:
        kw["networking_config"] = {network: client.api.create_endpoint_config(ipv4_address=ip)}
    c = client.containers.create(image, entrypoint=["/opt/venv/bin/python", "-c", PROBE, *targets], command=[],
                                 labels=labels, user="1000:1000", **kw)
    try:
        c.start()
        c.wait(timeout=60)
        return json.loads(c.logs(stdout=True, stderr=False).decode().strip().splitlines()[-1])
    finally:
        c.remove(force=True)


def _labels(role: str, campaign: str = TEST_CAMPAIGN) -> dict[str, str]:
    from orchestrator.labels import attempt_labels

    return attempt_labels(campaign, f"pytest-door-{uuid.uuid4().hex[:6]}", role)


def test_the_door_admits_the_gateway_address_alone_and_goes_with_the_sandbox(
        client, agent_image, backend, tmp_path, model_server, monkeypatch) -> None:
    from networks.topology import NetworkSpec
    from orchestrator.attempt.model_run import through_host_doors
    from orchestrator.backends.docker.sandbox import DockerSandbox
    from orchestrator.model_access import parse_model_access

    port, hits = model_server
    sb = DockerSandbox(backend, _context(tmp_path))
    made: list[Any] = []
    # A resolver that would rebind `localhost` elsewhere is never asked: the door's target is
    # the literal loopback address.
    real_getaddrinfo = socket.getaddrinfo

    def rebinding(host: Any, *args: Any, **kw: Any) -> Any:
        if str(host).lower() == "localhost":
            return real_getaddrinfo("127.0.0.2", *args, **kw)
        return real_getaddrinfo(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    try:
        declared = parse_model_access({"providers": {"openai": {"base_url": f"http://localhost:{port}",
                                                                "models": ["m"]}}}, "t")
        given = through_host_doors(sb, declared)  # what the attempt's gateway is configured with
        address, relay_port = sb.doors[0].relay.address
        assert given.providers["openai"].base_url == f"http://{address}:{relay_port}"
        assert declared.identity()["providers"]["openai"]["base_url"] == f"http://localhost:{port}"
        assert sb.doors[0].relay.target == ("127.0.0.1", port)  # (the resolver stays rebinding throughout)
        block, wall = sb.blocks["egress"], sb.firewalls["egress"]
        gateway_ip = block.host(backend.topology.addresses["gateway"])
        assert address == block.gateway  # the bridge's host address
        opening = [r for r in _rules(wall.network) if "--dport" in r.spec]
        assert sorted(r.spec[-1] for r in opening) == ["ACCEPT", "DROP"], opening
        assert all(r.command == "iptables" for r in opening)  # IPv4 only; ip6tables keeps its DROP
        door = f"{address}:{relay_port}"
        net = sb.networks["egress"].name
        # The gateway's address: through the door to the host's loopback service (positive control).
        assert probe_at(client, agent_image, net, gateway_ip, [door], _labels("probe"))[door] == "open"
        # Another address of the same network: nothing.
        other = probe_at(client, agent_image, net, block.host(9), [door, f"{address}:{port}"], _labels("probe"))
        assert other[door] != "open" and other[f"{address}:{port}"] != "open", other
        # An ordinary bridge (a route to the bridge address through the host): nothing either.
        plain = NetworkSpec("plain", True, "positive control", False, {}, False, ("x",))
        _pblock, plain_net = backend.create_network(f"{sb.prefix}-plain", plain, _labels("plain-net"))
        made.append(plain_net)
        got = probe_at(client, agent_image, plain_net.name, None, [door], _labels("probe"))
        assert got[door] != "open" and got["default_route"] is True, got
        assert len(hits) == 1  # only the gateway address's connection reached the service
        assert sb.doors[0].relay.counts.refused == 0  # the rules stopped the others before the relay
    finally:
        for obj in made:
            obj.remove()
        network = sb.firewalls["egress"].network if "egress" in sb.firewalls else None
        problems = sb.close()
    assert problems == [] and sb.doors == []
    assert network is not None and _rules(network) == []
    with pytest.raises(OSError):
        socket.create_connection((address, relay_port), timeout=2)
    assert not [t.name for t in threading.enumerate() if t.name.startswith(f"{sb.prefix}-gateway-relay")]
    assert not leftovers(client, sb.prefix)


def test_reap_removes_a_crashed_runs_door_rules(client, backend, tmp_path, model_server) -> None:
    """A crash takes the relay (threads of the dead process) and leaves the rules and the
    network: `reap` removes the network's rules, the door's among them."""
    from orchestrator.backends.docker.reaper import reap
    from orchestrator.backends.docker.sandbox import DockerSandbox

    campaign = f"{TEST_CAMPAIGN}-door-{uuid.uuid4().hex[:6]}"
    port, _hits = model_server
    sb = DockerSandbox(backend, _context(tmp_path, campaign))
    try:
        sb.open_host_port("egress", "gateway", ("127.0.0.1", port))
        wall = sb.firewalls["egress"]
        assert len(_rules(wall.network)) == 6  # ACCEPT replies + DROP, both families; the door's two
        sb.doors.pop().relay.close()  # the process died: its threads went with it
        sb.networks.pop("egress").remove()  # ... and the network is gone, its rules not
        sb.firewalls.pop("egress")
        report = reap(client, campaign=campaign)
        door = [x for x in report.removed if x.startswith("firewall rule") and wall.network in x]
        assert len(door) == 6 and not report.failed, report
        assert _rules(wall.network) == []
        out = subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True, check=True).stdout
        assert wall.tag not in out
    finally:
        assert sb.close() == []


def test_a_door_that_cannot_be_firewalled_is_an_infra_error_and_leaves_nothing_open(
        backend, tmp_path, model_server, monkeypatch) -> None:
    from orchestrator.backends.docker import firewall as docker_firewall
    from orchestrator.backends.docker.firewall import FirewallError
    from orchestrator.backends.docker.sandbox import DockerSandbox
    from orchestrator.errors import InfraError

    port, hits = model_server
    sb = DockerSandbox(backend, _context(tmp_path))
    try:
        sb.ensure_network("egress")
        real = docker_firewall._run

        def refuse_inserts(command: str, args: list[str]):
            if args[:1] == ["-I"] and "--dport" in args:
                return subprocess.CompletedProcess(args, 4, "", "iptables: refused by the test")
            return real(command, args)

        monkeypatch.setattr(docker_firewall, "_run", refuse_inserts)
        with pytest.raises(FirewallError, match="refused by the test") as info:
            sb.open_host_port("egress", "gateway", ("127.0.0.1", port))
        assert isinstance(info.value, InfraError)
        monkeypatch.undo()
        assert sb.doors == [] and [r for r in _rules(sb.firewalls["egress"].network) if "--dport" in r.spec] == []
        assert not [t.name for t in threading.enumerate() if t.name.startswith(f"{sb.prefix}-gateway-relay")]
        assert hits == []
    finally:
        assert sb.close() == []
