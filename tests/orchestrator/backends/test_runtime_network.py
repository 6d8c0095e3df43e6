"""The attempt topology on the real engine: the attempt network has no route out and no host
address, proven by a canary listener on the host (all addresses) that a container on an ordinary
bridge reaches and a container on the attempt network does not. Also: 32+ attempts' subnets."""
from __future__ import annotations

import socket
import threading
import uuid

import pytest
from runtime_support import TEST_CAMPAIGN, leftovers, probe_from

pytestmark = [pytest.mark.docker]


@pytest.fixture()
def canary():
    """A TCP listener on 0.0.0.0 (every host address), accepting in a thread."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", 0))
    srv.listen(16)
    stop = threading.Event()
    hits: list[str] = []

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, addr = srv.accept()
            except OSError:
                continue
            hits.append(addr[0])
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], hits
    stop.set()
    t.join(2)
    srv.close()


@pytest.fixture()
def made(client):
    """Networks created by a test; removed at the end even on failure."""
    nets: list = []
    yield nets
    for n in nets:
        try:
            n.remove()
        except Exception:  # noqa: BLE001
            pass
    assert not [x for x in leftovers(client) if "pytest-net" in x]


def _labels(owner_role: str) -> dict[str, str]:
    from orchestrator.labels import attempt_labels

    return attempt_labels(TEST_CAMPAIGN, f"pytest-net-{uuid.uuid4().hex[:6]}", owner_role)


def _docker0_address(client) -> str:
    """docker0's IPv4 address (the default bridge's gateway), from the interface itself."""
    import subprocess

    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True).stdout
    if "inet " in out:
        return out.split("inet ", 1)[1].split("/", 1)[0]
    cfg = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    return cfg.get("Gateway") or str(next(__import__("ipaddress").ip_network(cfg["Subnet"]).hosts()))


@pytest.fixture()
def sandbox(backend, tmp_path):
    """A real attempt sandbox (networks, volumes, the agent's network namespace); closed after."""
    from orchestrator.backends.base import AttemptContext
    from orchestrator.cells import Cell
    from orchestrator.identity import AttemptIdentity
    from orchestrator.paths import AttemptPaths

    paths = AttemptPaths.for_identity(tmp_path, "t", AttemptIdentity.of(Cell("null", "net"), 0, 0, 1))
    paths.prepare()
    backend.ensure_prepared()
    sb = backend.open_attempt(AttemptContext(f"pytest-net-{uuid.uuid4().hex[:6]}", TEST_CAMPAIGN, paths))
    yield sb
    assert sb.close() == []


def test_attempt_network_cannot_reach_host_canary(client, agent_image, backend, made, sandbox, canary):
    port, hits = canary
    block, cblock = sandbox.blocks["attempt"], sandbox.blocks["control"]
    # An ordinary (non-internal, IPv4 bridge address) network: the positive control.
    from networks.topology import NetworkSpec

    plain = NetworkSpec("plain", True, "positive control", False, {}, False, ("x",))
    pblock, plain_net = backend.create_network(f"pb-pytest-net-{uuid.uuid4().hex[:6]}-plain", plain, _labels("plain-net"))
    made.append(plain_net)

    docker0 = _docker0_address(client)
    targets = [f"{docker0}:{port}", f"{block.gateway}:{port}", f"{cblock.gateway}:{port}", f"{pblock.gateway}:{port}"]

    # The positive control: from an ordinary bridge the canary answers through docker0 and the bridge.
    seen = probe_from(client, agent_image, plain_net.name, [f"{docker0}:{port}", f"{pblock.gateway}:{port}"], _labels("probe"))
    assert seen[f"{docker0}:{port}"] == "open", seen
    assert seen[f"{pblock.gateway}:{port}"] == "open", seen
    assert seen["default_route"] is True, seen  # the probe can see a route when there is one
    assert hits, "the canary saw no connection from the ordinary bridge"

    # Where the agent runs (the attempt's network namespace): every path to the host is closed,
    # and there is no default route at all.
    before = len(hits)
    got = probe_from(client, agent_image, f"container:{sandbox.agent_namespace().id}", targets, _labels("probe"))
    for target in targets:
        assert got[target] != "open", f"{target} reachable from the attempt network: {got}"
    assert got["default_route"] is False, got
    assert len(hits) == before, f"the canary was reached: {hits[before:]}"

    # The engine really applied inhibit_ipv4: the attempt bridge has no IPv4 address on the host.
    import subprocess

    bridge = f"br-{sandbox.networks['attempt'].id[:12]}"
    addr = subprocess.run(["ip", "-4", "addr", "show", "dev", bridge], capture_output=True, text=True)
    assert addr.returncode == 0, addr.stderr
    assert "inet " not in addr.stdout, addr.stdout
    cbridge = f"br-{sandbox.networks['control'].id[:12]}"
    caddr = subprocess.run(["ip", "-4", "addr", "show", "dev", cbridge], capture_output=True, text=True)
    assert cblock.gateway in caddr.stdout  # the control bridge is the host's way in


def test_plain_internal_network_alone_is_not_enough(client, agent_image, backend, canary, made):
    """Why the topology needs inhibit_ipv4: an `--internal` network without it lets a container
    reach a host service through the bridge's own address (the design's observation)."""
    from networks.topology import NetworkSpec

    port, hits = canary
    internal = NetworkSpec("internal-only", True, "counter-example", True, {}, False, ("x",))
    block, net = backend.create_network(f"pb-pytest-net-{uuid.uuid4().hex[:6]}-int", internal, _labels("int-net"))
    made.append(net)
    got = probe_from(client, agent_image, net.name, [f"{block.gateway}:{port}"], _labels("probe"))
    assert got[f"{block.gateway}:{port}"] == "open", got


def test_control_network_reachable_from_host_only(client, agent_image, backend, made):
    """The host reaches a listener on the control network; the control bridge holds the gateway."""
    from networks.topology import load_topology

    topo = load_topology()
    tag = uuid.uuid4().hex[:6]
    cblock, control_net = backend.create_network(f"pb-pytest-net-{tag}-control", topo.networks["control"], _labels("control-net"))
    made.append(control_net)
    ip = cblock.host(2)
    c = client.containers.create(
        agent_image,
        entrypoint=["/opt/venv/bin/python", "-m", "http.server", "--bind", ip, "8081"],
        network=control_net.name,
        networking_config={control_net.name: client.api.create_endpoint_config(ipv4_address=ip)},
        labels=_labels("probe"),
        user="1000:1000",
        working_dir="/tmp",
    )
    try:
        c.start()
        import time

        import httpx

        deadline = time.monotonic() + 15
        while True:
            try:
                r = httpx.get(f"http://{ip}:8081/", timeout=1, trust_env=False)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert r.status_code == 200
    finally:
        c.remove(force=True)


def test_subnets_for_32_concurrent_attempts(client, backend, made):
    """64 networks (32 attempts × attempt + control) on explicit subnets, all distinct."""
    from networks.topology import load_topology

    topo = load_topology()
    tag = uuid.uuid4().hex[:6]
    blocks = []
    for i in range(32):
        for role in ("attempt", "control"):
            block, net = backend.create_network(f"pb-pytest-net-{tag}-{i}-{role}", topo.networks[role], _labels(f"{role}-net"))
            made.append(net)
            blocks.append(block.subnet)
    assert len(set(blocks)) == 64
    import ipaddress

    rng = ipaddress.ip_network(backend.config.subnet_range)
    assert all(ipaddress.ip_network(b).subnet_of(rng) for b in blocks)


def test_concurrent_allocators_treat_overlap_as_taken(client, made):
    """Two allocators sharing a range and the same start point: the engine's overlap refusal
    sends the second to the next block (what two orchestrator processes do)."""
    import random

    from networks.subnets import SubnetPool
    from networks.topology import load_topology
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import RuntimeConfig

    topo = load_topology()
    cfg = RuntimeConfig.from_env(campaign=TEST_CAMPAIGN)
    a, b = DockerBackend(cfg, client=client), DockerBackend(cfg, client=client)
    a.pool = SubnetPool(cfg.subnet_range, cfg.subnet_prefix, rng=random.Random(7))
    b.pool = SubnetPool(cfg.subnet_range, cfg.subnet_prefix, rng=random.Random(7))
    b.used_subnets = lambda: []  # b does not see a's network in its listing: only the engine refuses
    tag = uuid.uuid4().hex[:6]
    block_a, net_a = a.create_network(f"pb-pytest-net-{tag}-a", topo.networks["attempt"], _labels("attempt-net"))
    made.append(net_a)
    block_b, net_b = b.create_network(f"pb-pytest-net-{tag}-b", topo.networks["attempt"], _labels("attempt-net"))
    made.append(net_b)
    assert block_a.subnet != block_b.subnet
