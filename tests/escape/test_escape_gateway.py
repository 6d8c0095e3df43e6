"""The escape suite, gateway part (issue 11): probes from inside the agent container of a live
attempt with a model gateway, and from inside the gateway container, each beside a positive
control.

Two live attempts, A and B, are opened through the docker backend (tests/support/escape_support.py);
each gets the project's fake provider on its egress network and a model gateway (the services
of orchestrator/services/gateway.py). The probes never leave the machine: every target is one of
these containers or the host canary.
"""
from __future__ import annotations

import hashlib
import json
import secrets
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
from escape_support import PROBE_SCRIPT, PROBE_TARGET, Canary, EscapeLab, escape_scenario, host_ipv4_addresses

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

GW_PROBE_TARGET = "/opt/gwprobe/probe.py"
PYTHON = "/opt/venv/bin/python"
MODEL = "fake-claude"

# Runs in the agent container (and in the gateway container): raw HTTP requests and TCP connects.
GW_PROBE = textwrap.dedent('''
    import json, os, socket, sys

    def tcp(target, timeout=2.0):
        host, port = target.rsplit(":", 1)
        s = socket.socket(); s.settimeout(timeout)
        try:
            s.connect((host, int(port))); return "open"
        except socket.timeout:
            return "timeout"
        except OSError as exc:
            return type(exc).__name__ + ":" + str(exc.errno)
        finally:
            s.close()

    def raw(target, head, body=b""):
        host, port = target.rsplit(":", 1)
        try:
            s = socket.create_connection((host, int(port)), timeout=5)
        except OSError as exc:
            return {"error": type(exc).__name__}
        try:
            s.sendall(head.encode() + b"Connection: close\\r\\n\\r\\n" + body)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError as exc:
            return {"error": type(exc).__name__}
        finally:
            s.close()
        parts = data.split(b"\\r\\n", 1)[0].split()
        return {"status": int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None,
                "body": data.split(b"\\r\\n\\r\\n", 1)[-1][:600].decode("utf-8", "replace")}

    spec = json.load(open(sys.argv[1]))
    key = os.environ.get(spec.get("key_env") or "", "")
    out = {"tcp": {t: tcp(t) for t in spec.get("tcp", [])}, "requests": {}}
    for r in spec.get("requests", []):
        body = json.dumps({"model": r.get("model", "fake-claude"), "max_tokens": 16,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        k = r["key"] if "key" in r else key
        head = (f"{r.get('method', 'POST')} {r['request_target']} HTTP/1.1\\r\\nHost: {r['host']}\\r\\n"
                f"x-api-key: {k}\\r\\nanthropic-version: 2023-06-01\\r\\ncontent-type: application/json\\r\\n"
                f"content-length: {len(body)}\\r\\n")
        out["requests"][r["name"]] = raw(r["connect"], head, body if r.get("method", "POST") != "CONNECT" else b"")
    out["env_names"] = sorted(os.environ)
    routes = []
    for line in open("/proc/net/route").read().splitlines()[1:]:
        f = line.split()
        routes.append({"iface": f[0], "dest": f[1], "mask": f[7]})
    out["default_route"] = any(r["dest"] == "00000000" and r["mask"] == "00000000" for r in routes)
    json.dump(out, open(sys.argv[2], "w"))
''')


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class GatewayAttempt:
    """A live attempt with its fake provider and gateway started, and its secrets."""

    def __init__(self, lab: EscapeLab, live: Any, gateway_image: str) -> None:
        from orchestrator.model_access import parse_model_access
        from orchestrator.services.gateway import (
            CONTROL,
            FAKE_PROVIDER,
            GATEWAY,
            PROXY,
            PROXY_PORT,
            GatewayLaunch,
            fake_provider_service,
            gateway_service,
        )

        self.live = live
        self.real_key = secrets.token_hex(32)  # hex64: the secrets probe hashes such tokens
        self.control_token = secrets.token_hex(32)
        self.virtual_key = "pbv-" + secrets.token_urlsafe(32)
        script = {"match": "any", "require_key": self.real_key, "steps": [],
                  "otherwise": {"content": [{"type": "text", "text": "hello"}], "usage": {"input_tokens": 7, "output_tokens": 2}}}
        sandbox = live.sandbox
        from dataclasses import replace

        fake = sandbox.start_service(replace(fake_provider_service(json.dumps(script).encode(), lab.config), image=gateway_image))
        sandbox.wait_service_healthy(FAKE_PROVIDER)
        self.fake_url = fake.url("url")
        access = parse_model_access({"providers": {"anthropic": {"base_url": self.fake_url, "models": [MODEL]}}}, "test")
        block = sandbox.blocks["attempt"]
        self.proxy_addr = f"{sandbox.addresses.get(GATEWAY, {}).get('attempt') or block.host(3)}:{PROXY_PORT}"
        launch = GatewayLaunch(attempt_id=live.name, access=access, virtual_key=self.virtual_key,
                               control_token=self.control_token, upstream_keys={"anthropic": self.real_key},
                               clients=(block.subnet,), extra_hosts=(self.proxy_addr,))
        endpoints = sandbox.start_service(replace(gateway_service(launch, lab.config), image=gateway_image))
        sandbox.wait_service_healthy(GATEWAY, error=RuntimeError)
        from orchestrator.attempt.model_run import pin_gateway_routes

        self.routes = pin_gateway_routes(sandbox, [])  # what every attempt's gateway gets
        self.control_url = endpoints.url(CONTROL)
        self.proxy_url = endpoints.url(PROXY)
        self.addresses = sandbox.addresses[GATEWAY]  # role -> address
        self.fake_addr = self.fake_url.removeprefix("http://")

    def control(self, method: str, path: str) -> httpx.Response:
        return httpx.request(method, self.control_url + path, headers={"Authorization": f"Bearer {self.control_token}"},
                             timeout=10, trust_env=False)

    def gateway_exec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The probe run inside the gateway container itself (as its own user)."""
        container = self.live.sandbox.containers["gateway"]
        script = GW_PROBE.replace("json.load(open(sys.argv[1]))", "json.loads(sys.argv[1])").replace(
            'json.dump(out, open(sys.argv[2], "w"))', "print(json.dumps(out))")
        rc, out = container.exec_run([PYTHON, "-c", script, json.dumps(spec)], user="1002:1002")
        assert rc == 0, out.decode(errors="replace")
        return json.loads(out.decode().strip().splitlines()[-1])


def agent_turn(lab: EscapeLab, ga: GatewayAttempt, spec: dict[str, Any], probe_file: Path, *,
               secrets_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """One agent turn of ga's attempt running the gateway probe (or escape_probe's secrets mode)."""
    from agent_sandbox.systems import BUILTIN_SYSTEMS, SystemSpec
    from orchestrator.backends.base import Mount, TurnLaunch

    live = ga.live
    live.turns += 1
    n = live.turns
    turn_dir = lab.config.container_paths.turn_dir
    if secrets_spec is not None:
        argv: tuple[str, ...] = (PYTHON, PROBE_TARGET, "--spec", f"{turn_dir}/spec.json", "--out", "{out_dir}/probe.json")
        body = secrets_spec
    else:
        argv = (PYTHON, GW_PROBE_TARGET, f"{turn_dir}/spec.json", "{out_dir}/probe.json")
        body = spec
    system = SystemSpec(name="gateway-probe", argv=argv)
    model = BUILTIN_SYSTEMS["claude-code"].model
    assert model is not None
    env = {"ERP_URL": live.endpoints.agent_url, "ERP_TOKEN": live.agent_token, "TURN_BUDGET_S": "240",
           **model.turn_env(f"http://{ga.proxy_addr}", ga.virtual_key, MODEL)}
    files = {"prompt.txt": b"gateway probe\n", "system.json": json.dumps(system.system_json({})).encode(),
             "context.json": json.dumps({"turn": n, "date": "2026-01-05", "budget_s": 240}).encode(),
             "spec.json": json.dumps(body).encode()}
    run = live.sandbox.run_turn(TurnLaunch(
        n=n, files=files, env=env, budget_s=240, host_turn_dir=live.paths.turn_dir(n), log_path=live.paths.turn_log(n),
        mounts=(Mount(probe_file, GW_PROBE_TARGET), Mount(PROBE_SCRIPT, PROBE_TARGET))))
    report = live.paths.turn_dir(n) / "out" / "probe.json"
    assert run.exit_code == 0 and report.is_file(), f"probe turn failed: {run}\n{lab.turn_diagnostics(live)}"
    return json.loads(report.read_text())


@pytest.fixture(scope="module")
def glab(docker_client, images, tmp_path_factory):
    lab = EscapeLab(docker_client, images, escape_scenario("payment-run", 0), tmp_path_factory.mktemp("escape-gw"))
    problems: list[str] = []
    try:
        lab.canary = Canary()
        lab.probe_file = tmp_path_factory.mktemp("gwprobe") / "probe.py"
        lab.probe_file.write_text(GW_PROBE)
        lab.ga = GatewayAttempt(lab, lab.open_attempt("A"), images.gateway.tag)
        lab.gb = GatewayAttempt(lab, lab.open_attempt("B"), images.gateway.tag)
        yield lab
    finally:
        problems = lab.close()
    assert not problems, problems


def request(name: str, ga: GatewayAttempt, *, host: str = "model-gateway:8080", target: str = "/v1/messages", **kw: Any) -> dict:
    return {"name": name, "connect": ga.proxy_addr, "host": host, "request_target": target, **kw}


def test_agent_reaches_the_gateway_only_and_it_refuses_what_is_not_declared(glab) -> None:
    a, b = glab.ga, glab.gb
    spec = {
        "key_env": "ANTHROPIC_API_KEY",
        "tcp": [a.fake_addr, f"{a.addresses['egress']}:8080", f"{a.addresses['gateway-control']}:8081",
                b.proxy_addr, b.fake_addr],
        "requests": [
            request("good", a),  # the positive control of every refusal below
            request("other host", a, host=a.fake_addr),
            request("absolute url", a, target=f"{a.fake_url}/v1/messages"),
            request("connect", a, method="CONNECT", target=a.fake_addr, host=a.fake_addr),
            request("other attempt's key", a, key=b.virtual_key),
            request("the real key", a, key=a.real_key),
            request("undeclared model", a, model="claude-opus-4-1"),
            request("unknown path", a, target="/v1/models", method="GET"),
        ],
    }
    report = agent_turn(glab, a, spec, glab.probe_file)
    statuses = {k: v.get("status") for k, v in report["requests"].items()}
    assert statuses == {"good": 200, "other host": 421, "absolute url": 400, "connect": 405,
                        "other attempt's key": 401, "the real key": 401, "undeclared model": 400, "unknown path": 404}, report
    assert "hello" in report["requests"]["good"]["body"]
    # From the agent: neither the fake upstream, nor the gateway's egress or control side, nor B.
    assert all(v != "open" for v in report["tcp"].values()), report["tcp"]
    # Positive controls: the gateway container reaches its upstream; the host reaches the control API.
    from_gateway = a.gateway_exec({"tcp": [a.fake_addr]})
    assert from_gateway["tcp"][a.fake_addr] == "open"
    assert a.control("GET", "/control/health").status_code == 200
    # Only the good request reached the provider.
    received = httpx.get(a.fake_url + "/_fake/requests", timeout=10, trust_env=False).json()["items"]
    assert len(received) == 1 and received[0]["headers"]["x-api-key"] == a.real_key


def test_expired_key_refused(glab) -> None:
    b = glab.gb
    before = agent_turn(glab, b, {"key_env": "ANTHROPIC_API_KEY", "requests": [request("good", b)]}, glab.probe_file)
    assert before["requests"]["good"]["status"] == 200  # positive control: the key works while the attempt runs
    assert b.control("POST", "/control/revoke").status_code == 200
    after = agent_turn(glab, b, {"key_env": "ANTHROPIC_API_KEY", "requests": [request("expired", b)]}, glab.probe_file)
    assert after["requests"]["expired"]["status"] == 401 and "expired" in after["requests"]["expired"]["body"]


def test_no_key_or_gateway_token_in_the_agent_container(glab) -> None:
    a = glab.ga
    hashes = [sha(a.real_key), sha(a.control_token)]
    report = agent_turn(glab, a, {}, glab.probe_file, secrets_spec={"mode": "secrets", "token_sha256": hashes,
                                                                   "check_writes": False})
    assert report["files_scanned"] > 100
    assert (report["token_env"], report["token_proc"], report["token_files"]) == ([], [], [])
    # Positive control: the same scan finds the real key when it is planted in a file, the
    # environment and the argv of a background process of a container of the same image, so an
    # empty token_proc above means the process-list scan looked and found nothing.
    pc = glab.control_probe({"mode": "secrets", "token_sha256": hashes, "check_writes": False},
                            environment={"LEAKED": a.real_key}, plant={"leak.txt": a.real_key.encode()},
                            read_only=False,
                            background_argv=[PYTHON, "-c", "import time; time.sleep(120)", a.real_key])
    assert pc["token_env"] and pc["token_files"] == ["/opt/planted/leak.txt"], pc
    assert any(p.endswith("/cmdline") for p in pc["token_proc"]), pc["token_proc"]
    assert any(p.endswith("/environ") for p in pc["token_proc"]), pc["token_proc"]


def test_gateway_cannot_reach_control_api_host_or_other_attempt(glab) -> None:
    a, b = glab.ga, glab.gb
    cfg = glab.config
    a_erp, b_erp = a.live.sandbox.addresses["erp"], b.live.sandbox.addresses["erp"]
    host_addrs = host_ipv4_addresses()
    canary = glab.canary
    egress_gw = a.live.sandbox.blocks["egress"].gateway
    # Nothing beyond the egress subnet is routed from the gateway: so the probes below of other
    # attempts' addresses cannot leave the machine (checked first, as the agent-side suite does).
    first = a.gateway_exec({"tcp": []})
    assert first["default_route"] is False, a.routes
    # Every host address, the two on the gateway's own bridges included (egress: its route out;
    # gateway-control: where the host reaches it): the host firewall drops new connections from
    # those bridges (orchestrator/backends/docker/firewall.py).
    bridges = {egress_gw, a.live.sandbox.blocks["gateway-control"].gateway}
    hosts = [f"{ip}:{canary.port}" for ip in sorted({host_addrs.get("docker0", "172.17.0.1"), *host_addrs.values(), *bridges})]
    spec = {"tcp": [f"{a_erp['control']}:{cfg.erp_control_port}",  # A's ERP control API
                    f"{b_erp['control']}:{cfg.erp_control_port}", f"{b_erp['attempt']}:{cfg.erp_agent_port}",
                    b.proxy_addr, f"{b.addresses['gateway-control']}:8081", b.fake_addr, *hosts]}
    hits = len(canary.hits)
    report = a.gateway_exec(spec)
    opened = sorted(t for t, v in report["tcp"].items() if v == "open")
    assert opened == [], f"the gateway reached {opened}"
    assert canary.hits[hits:] == []
    # The rules are what closes the bridges: both networks carry them now.
    walls = a.live.sandbox.firewalls
    assert set(walls) == {"egress", "gateway-control"} and all(w.installed() for w in walls.values())
    # Positive controls: the gateway reaches its upstream on the egress network (same container,
    # same moment); the host reaches the gateway's control port through the firewalled bridge
    # (replies pass) and A's ERP control API; B's gateway reaches B's upstream; an ordinary
    # bridge network reaches the host canary.
    assert a.gateway_exec({"tcp": [a.fake_addr]})["tcp"][a.fake_addr] == "open"
    assert a.control("GET", "/control/health").status_code == 200
    assert glab.ga.live.control.health()
    assert b.gateway_exec({"tcp": [b.fake_addr]})["tcp"][b.fake_addr] == "open"
    plain_block, plain_net = glab.plain_network()
    pc = glab.control_probe({"mode": "network", "http": [f"{plain_block.gateway}:{canary.port}"]}, network=plain_net.name)
    assert pc["http"][f"{plain_block.gateway}:{canary.port}"]["status"] == 200
    assert len(canary.hits) > hits
