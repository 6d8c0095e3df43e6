"""A model the user serves on the orchestrator's own host (issue 31, item 5), in containers.

An OpenAI-compatible fake (the project's fake provider, a real process) listens on the host's
127.0.0.1 and is declared as the upstream (`base_url: http://127.0.0.1:PORT`, a key the host
holds). One real attempt (payment-run seed 0, docker backend) runs a command system whose agent
calls Chat Completions through the gateway and, in the same turn, probes the host; while that turn
waits, the test probes from the gateway's own network namespace, from another container on the
attempt's egress network and from an ordinary bridge. Beside the fake on the host: a canary on
127.0.0.1 and a canary on every host address. Each probe has its positive control:

- the agent reaches the host model through the gateway (both calls answered by the fake) and
  reaches nothing of the host itself: not the relay, not the canaries, not the fake's port;
- the gateway reaches the relay (and through it the fake) and no other port of the host;
- another container on the egress network, and a container on an ordinary bridge, cannot use
  the relay (the ordinary bridge still reaches the all-addresses canary: the probe works);
- afterwards nothing is left: no rule in iptables, no relay, no engine object.
"""
from __future__ import annotations

import json
import socket
import textwrap
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from escape_support import host_ipv4_addresses
from runtime_support import probe_from

# make test-heavy (CI time): make test keeps test_runtime_host_door.py (the door's rules and relay
# from the gateway's address alone, in containers).
pytestmark = [pytest.mark.docker, pytest.mark.heavy, pytest.mark.timeout(1200)]

MODEL = "llama-3.1-8b-instruct"
REAL_KEY = "sk-host-" + uuid.uuid4().hex
MOUNT = "/opt/hostprobe"
WAIT_S = 300

# The agent's command: in turn 1, probe the host, call the model twice through the gateway, and
# wait until the host side has probed too (so the gateway is still there to be probed).
AGENT = textwrap.dedent('''
    import json, os, socket, sys, time, urllib.error, urllib.request
    here, prompt_file, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    turn = json.load(open(os.path.join(os.path.dirname(prompt_file), "context.json")))["turn"]
    out = {"turn": turn}
    def wait_for(name):
        deadline = time.time() + %(wait)d
        while not os.path.exists(os.path.join(here, name)) and time.time() < deadline:
            time.sleep(0.5)
        return open(os.path.join(here, name)).read().strip() if os.path.exists(os.path.join(here, name)) else None
    def tcp(target):
        host, port = target.rsplit(":", 1)
        s = socket.socket(); s.settimeout(2.0)
        try:
            s.connect((host, int(port))); return "open"
        except OSError as exc:
            return type(exc).__name__
        finally:
            s.close()
    def chat(body):
        req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                                     data=json.dumps(dict(body, model=os.environ["PB_MODEL"])).encode(),
                                     headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                                              "content-type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return {"status": resp.status, "body": resp.read().decode()}
        except urllib.error.HTTPError as exc:
            return {"status": exc.code, "body": exc.read().decode()}
    if turn == 1:
        spec = json.load(open(os.path.join(here, "spec.json")))
        relay = wait_for("relay.txt")
        targets = spec["targets"] + ([relay] if relay else [])
        out["relay"] = relay
        out["tcp"] = {t: tcp(t) for t in targets}
        user = [{"role": "user", "content": "hi"}]
        out["chat"] = chat({"messages": user})
        out["chat_stream"] = chat({"messages": user, "stream": True})
        out["env"] = dict(os.environ)
        out["host_probes_done"] = wait_for("host-probes.done") is not None
    json.dump(out, open(os.path.join(out_dir, "probe.json"), "w"))
''') % {"wait": WAIT_S}


class TcpCanary:
    """A TCP listener on the host (`host`: 127.0.0.1 beside the fake, or 0.0.0.0, every host
    address), recording who connected."""

    def __init__(self, host: str) -> None:
        self.hits: list[str] = []
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, addr = self.sock.accept()
            except OSError:
                return
            self.hits.append(addr[0])
            conn.close()

    def close(self) -> None:
        self.sock.close()


def campaign_rules(campaign: str) -> list[Any]:
    from orchestrator.backends.docker.firewall import campaign_key, list_tagged_rules

    return [r for r in list_tagged_rules() if r.campaign_key == campaign_key(campaign)]


def opening(rules: list[Any]) -> tuple[str, str, int] | None:
    """(source, address, port) of the ACCEPT rule of a door, from the live iptables rules."""
    for r in rules:
        words = list(r.spec)
        if "--dport" in words and words[-1] == "ACCEPT":
            return (words[words.index("-s") + 1].removesuffix("/32"), words[words.index("-d") + 1].removesuffix("/32"),
                    int(words[words.index("--dport") + 1]))
    return None


class HostSide:
    """The test's side during the attempt: finds the door in iptables, tells the agent, probes."""

    def __init__(self, client: Any, agent_image: str, campaign: str, here: Path, canary: TcpCanary,
                 loop: TcpCanary, fake_port: int) -> None:
        self.client, self.agent_image, self.campaign, self.here = client, agent_image, campaign, here
        self.canary, self.loop, self.fake_port = canary, loop, fake_port
        self.got = SimpleNamespace(rules=[], door=None, gateway={}, egress_peer={}, plain={}, plain_subnet=None,
                                   error=None)
        self.made: list[Any] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def labels(self, role: str) -> dict[str, str]:
        from orchestrator.labels import attempt_labels

        return attempt_labels(self.campaign, "hostmodel-probes", role)

    def _run(self) -> None:
        try:
            self._probe()
        except Exception as exc:  # noqa: BLE001 — reported by the test after the attempt
            self.got.error = repr(exc)
        finally:
            (self.here / "relay.txt").touch()
            (self.here / "host-probes.done").write_text("done\n")

    def _probe(self) -> None:
        g = self.got
        deadline = time.monotonic() + WAIT_S
        while (door := opening(rules := campaign_rules(self.campaign))) is None:
            assert time.monotonic() < deadline, "no door opened in iptables"
            time.sleep(0.5)
        g.rules, g.door = rules, door
        source, address, port = door
        relay = f"{address}:{port}"
        (self.here / "relay.txt.part").write_text(relay)
        (self.here / "relay.txt.part").replace(self.here / "relay.txt")
        # The agent's turn runs once the gateway is healthy and its routes pinned: probe then.
        while not self.client.containers.list(filters={"label": [f"pb.campaign={self.campaign}", "pb.role=agent"]}):
            assert time.monotonic() < deadline, "no agent turn started"
            time.sleep(0.5)
        gateway = self.client.containers.list(filters={"label": [f"pb.campaign={self.campaign}", "pb.role=gateway"]})[0]
        egress = next(n for n in gateway.attrs["NetworkSettings"]["Networks"] if n.endswith("-egress"))
        others = [f"{a}:{self.canary.port}" for a in sorted(set(host_ipv4_addresses().values()))]
        g.gateway = probe_from(self.client, self.agent_image, f"container:{gateway.id}",
                               [relay, f"{address}:{self.canary.port}", f"{address}:{self.loop.port}",
                                f"{address}:{self.fake_port}", *others], self.labels("probe"))
        g.egress_peer = probe_from(self.client, self.agent_image, egress, [relay], self.labels("probe"))
        from networks.topology import NetworkSpec

        plain = NetworkSpec("plain", True, "positive control", False, {}, False, ("x",))
        from orchestrator.backends.docker.sandbox import DockerBackend
        from orchestrator.config import RuntimeConfig

        backend = DockerBackend(RuntimeConfig.from_env(campaign=self.campaign), client=self.client)
        block, net = backend.create_network(f"pb-hostmodel-{uuid.uuid4().hex[:6]}-plain", plain, self.labels("plain-net"))
        self.made.append(net)
        g.plain_subnet = block.subnet
        g.plain = probe_from(self.client, self.agent_image, net.name, [relay, f"{block.gateway}:{self.canary.port}"],
                             self.labels("probe"))

    def close(self) -> None:
        for obj in self.made:
            obj.remove()


@pytest.fixture()
def host_model(tmp_path, monkeypatch):
    """The fake on the host's loopback (requiring the host's key) and the two canaries."""
    from model_gateway.local import start_fake_provider

    script = {"match": "any", "require_key": REAL_KEY, "steps": [],
              "otherwise": {"content": [{"type": "text", "text": "served on the host"}],
                            "usage": {"input_tokens": 321, "output_tokens": 12}}}
    (tmp_path / "fake").mkdir()
    fake = start_fake_provider(script, workdir=tmp_path / "fake")
    canary, loop = TcpCanary("0.0.0.0"), TcpCanary("127.0.0.1")
    monkeypatch.setenv("PB_TEST_HOST_MODEL_KEY", REAL_KEY)
    try:
        yield SimpleNamespace(fake=fake, port=int(fake.ready["url"].rsplit(":", 1)[1]), canary=canary, loop=loop)
    finally:
        fake.stop()
        canary.close()
        loop.close()


def test_a_host_model_is_reached_by_the_gateway_alone(tmp_path, docker_client, images, host_model) -> None:
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import Images, RuntimeConfig
    from orchestrator.inputs import load_inputs

    campaign = f"pytest-hostmodel-{uuid.uuid4().hex[:6]}"
    here = tmp_path / "probe"
    here.mkdir()
    here.chmod(0o755)  # read by the agent user through a read-only mount
    (here / "agent.py").write_text(AGENT)
    hm = host_model
    host_addrs = sorted(set(host_ipv4_addresses().values()))
    targets = [f"{a}:{p}" for a in host_addrs for p in (hm.canary.port, hm.port)]
    (here / "spec.json").write_text(json.dumps({"targets": targets}))
    systems = tmp_path / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"host-chat": {
        "argv": ["/opt/venv/bin/python", f"{MOUNT}/agent.py", MOUNT, "{prompt_file}", "{out_dir}"],
        "mounts": [f"{here}:{MOUNT}"],
        "model": {"provider": "openai", "model": MODEL, "base_url_env": "OPENAI_BASE_URL",
                  "key_env": "OPENAI_API_KEY", "base_path": "/v1"}}}}))
    access = tmp_path / "model-access.yaml"
    access.write_text(yaml.safe_dump({"providers": {"openai": {
        "base_url": f"http://127.0.0.1:{hm.port}", "key_env": "PB_TEST_HOST_MODEL_KEY", "models": [MODEL]}},
        "budget": {"max_tokens": 100000}}))

    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    backend = DockerBackend(cfg, client=docker_client)
    inputs = load_inputs(parse_cell("host-chat:payment-run"), 0)
    side = HostSide(docker_client, images.agent.tag, campaign, here, hm.canary, hm.loop, hm.port)
    side.thread.start()
    try:
        result = run_attempt(AttemptSpec(parse_cell("host-chat:payment-run"), 0, systems_file=systems,
                                         model_access=access),
                             backend=backend, config=cfg, task=inputs.task, scenario=inputs.scenario)
        side.thread.join(timeout=60)
    finally:
        side.close()
        left = _remove_campaign(docker_client, campaign)
    rec, p, g = result.record, result.paths, side.got
    assert g.error is None, g.error
    assert rec["outcome"] == "graded", rec.get("error")

    # The door: one ACCEPT from the gateway's egress address to one port of the bridge's host
    # address, one DROP of that port from anywhere else, in iptables while the attempt ran.
    source, address, port = g.door
    assert source.rsplit(".", 1)[0] == address.rsplit(".", 1)[0] and source != address
    door_rules = [r for r in g.rules if f"{port}" in r.spec and "--dport" in r.spec]
    assert sorted(r.spec[-1] for r in door_rules) == ["ACCEPT", "DROP"] and all(r.command == "iptables" for r in door_rules)
    assert any("-i" in r.spec for r in door_rules if r.spec[-1] == "ACCEPT")

    # The agent: the host model through the gateway (positive controls), nothing of the host.
    probe = json.loads((p.turn_dir(1) / "out" / "probe.json").read_text())
    assert probe["chat"]["status"] == 200 and "served on the host" in probe["chat"]["body"], probe["chat"]
    assert probe["chat_stream"]["status"] == 200 and "served on the host" in probe["chat_stream"]["body"]
    assert probe["relay"] == f"{address}:{port}" and probe["host_probes_done"] is True
    assert [t for t, state in probe["tcp"].items() if state == "open"] == [], probe["tcp"]
    assert f"{address}:{port}" in probe["tcp"] and len(probe["tcp"]) == len(targets) + 1
    assert REAL_KEY not in json.dumps(probe["env"])  # the host's key stays with the gateway

    # The gateway: the relay (positive control) and no other port of the host.
    gw = g.gateway
    assert gw[f"{address}:{port}"] == "open", gw
    assert [t for t, state in gw.items() if state == "open" and t != f"{address}:{port}"] == [], gw
    # Another container on the egress network cannot use the relay; nor can an ordinary bridge,
    # which still reaches the canary on every host address (the probe works).
    assert g.egress_peer[f"{address}:{port}"] != "open", g.egress_peer
    assert g.plain[f"{address}:{port}"] != "open", g.plain
    assert [v for k, v in g.plain.items() if k.endswith(f":{hm.canary.port}")] == ["open"], g.plain

    # The fake received exactly the agent's two calls, with the host's key; the ledger holds its
    # usage call for call (the stream asked for its usage by the gateway); the model is unpriced.
    received = [json.loads(x) for x in hm.fake.files["record"].read_text().splitlines()]
    assert [r["body"].get("stream") for r in received] == [None, True]
    assert received[1]["body"]["stream_options"] == {"include_usage": True}
    assert all(r["headers"]["authorization"] == f"Bearer {REAL_KEY}" and r["status"] == 200 for r in received)
    ledger = [json.loads(x) for x in (p.root / "gateway.jsonl").read_text().splitlines()]
    assert [(r["endpoint"], r["status"], r["turn"]) for r in ledger] == [("chat", "ok", 1), ("chat", "ok", 1)]
    assert [(r["input_tokens"], r["output_tokens"], r["cost_usd"]) for r in ledger] == [(321, 12, None)] * 2
    assert rec["usage"]["requests"] == 2 and rec["usage"]["output_tokens"] == 24
    assert rec["usage"]["source"] == "gateway"
    # The canaries: the loopback one heard nothing, the all-addresses one only the positive control.
    assert hm.loop.hits == []
    import ipaddress

    assert hm.canary.hits and all(ipaddress.ip_address(h) in ipaddress.ip_network(g.plain_subnet)
                                  for h in hm.canary.hits), hm.canary.hits

    # Nothing left: no rule of the campaign, no relay thread, no engine object; the runtime log
    # says what the relay did (the gateway's connection forwarded; the others never reached it).
    assert campaign_rules(campaign) == []
    assert not [t.name for t in threading.enumerate() if "-relay" in t.name]
    assert left == [], left
    events = [json.loads(x) for x in (p.logs / "runtime.jsonl").read_text().splitlines()]
    opened = [e for e in events if e["event"] == "host_door_opened"]
    closed = [e for e in events if e["event"] == "host_door_closed"]
    assert len(opened) == len(closed) == 1 and opened[0]["listen"] == f"{address}:{port}"
    assert opened[0]["target"] == f"127.0.0.1:{hm.port}" and opened[0]["allowed"] == [source]
    assert closed[0]["forwarded"] >= 1 and closed[0]["refused"] == 0, closed[0]


def _remove_campaign(client: Any, campaign: str) -> list[str]:
    flt = {"label": f"pb.campaign={campaign}"}
    left = [f"container {c.name}" for c in client.containers.list(all=True, filters=flt)]
    left += [f"network {n.name}" for n in client.networks.list(filters=flt)]
    left += [f"volume {v.name}" for v in client.volumes.list(filters=flt)]
    for c in client.containers.list(all=True, filters=flt):
        c.remove(force=True)
    for v in client.volumes.list(filters=flt):
        v.remove(force=True)
    for n in client.networks.list(filters=flt):
        n.remove()
    return left
