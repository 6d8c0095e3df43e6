"""A human attempt on the docker backend: the web UI runs in its own container and is the only
thing of the attempt the engine publishes, on 127.0.0.1 only.

The real runtime on a small fake scenario served by the real bb-erp (tests/support/runtime_support.py),
the ERP and web UI containers from the project's ERP image; a plain HTTP client plays the person
(sign-in link, the home page the UI builds from the agent API, "End turn" twice). The facts come
from the engine (port bindings, networks) and from probes run inside the web UI's container, each
beside a positive control. The browser version of this attempt is test_browser_payment_run_docker.py.
"""
from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from runtime_support import TEST_CAMPAIGN, docker_client, fake_scenario, resolve_images

pytestmark = [pytest.mark.docker]

# Run inside the web UI's container: TCP connects to each target, and whether a default route is left.
PROBE = """
import json, socket, sys
out = {}
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket(); s.settimeout(2.0)
    try:
        s.connect((host, int(port))); out[target] = "open"
    except OSError as exc:
        out[target] = type(exc).__name__
    finally:
        s.close()
routes = open("/proc/net/route").read().split("\\n")[1:]
out["default_route"] = any(r.split()[1:2] == ["00000000"] for r in routes if r.strip())
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def client() -> Any:
    return docker_client()


@pytest.fixture()
def runtime(request: pytest.FixtureRequest, tmp_path: Path, client: Any) -> Any:
    """(config, backend) under a campaign label of its own; nothing of it may be left afterwards."""
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    images = resolve_images(request)
    campaign = f"{TEST_CAMPAIGN}-web-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    yield cfg, DockerBackend(cfg, client=client)
    where = {"label": f"pb.campaign={campaign}"}
    left: list[Any] = [*client.containers.list(all=True, filters=where), *client.networks.list(filters=where),
                       *client.volumes.list(filters=where)]
    for o in left:
        try:
            o.remove(force=True) if hasattr(o, "stop") else o.remove()
        except Exception:  # noqa: BLE001 — best effort; the assert below reports them
            pass
    assert not left, f"left behind: {[o.name for o in left]}"


def _wait(what: str, check: Any, timeout: float, worker: threading.Thread, outcome: dict[str, Any]) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert worker.is_alive(), f"the attempt ended while waiting for {what}: {outcome}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g}s"
        time.sleep(0.2)


def _page(person: httpx.Client, path: str) -> str | None:
    """The page's HTML once the UI serves it (not a redirect to the waiting page)."""
    r = person.get(path)
    return r.text if r.status_code == 200 else None


def test_human_attempt_in_containers_publishes_only_the_web_ui_on_loopback(runtime: Any, tmp_path: Path, client: Any) -> None:
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    cfg, backend = runtime
    scenario, task = fake_scenario(tmp_path / "scenario", turns=2, budget_s=120)
    spec = AttemptSpec(parse_cell("human:fake"), 0, rep=1, label=cfg.campaign)
    outcome: dict[str, Any] = {}
    cancel = threading.Event()  # set when the test fails midway: the attempt tears itself down

    def attempt() -> None:
        try:
            outcome["result"] = run_attempt(spec, backend=backend, config=cfg, scenario=scenario, task=task, grade=False,
                                            cancel=cancel)
        except BaseException as exc:  # noqa: BLE001 — reported by the asserts below
            outcome["error"] = exc

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    try:
        _work_the_attempt(cfg, client, worker, outcome)
    finally:
        cancel.set()
        worker.join(120)
    assert "error" not in outcome, outcome.get("error")
    rec = outcome["result"].record
    assert rec["outcome"] == "graded", rec.get("error")
    assert (rec["system"], rec["cell"], rec["isolation"]) == ("human", "human:fake", "docker")
    assert [t["notes"] for t in rec["turns"]] == [["ended by the person (End turn)"]] * 2


def _work_the_attempt(cfg: Any, client: Any, worker: threading.Thread, outcome: dict[str, Any]) -> None:
    """What the person and the engine show while the attempt runs, up to its end."""
    root = cfg.runs_root / cfg.campaign
    human_json = _wait("human.json", lambda: next(root.rglob("human.json"), None), 300, worker, outcome)
    info = json.loads(human_json.read_text())
    ui = info["url"]
    assert info["isolation"] == "docker" and urlsplit(ui).hostname == "127.0.0.1", info

    # -- the engine's facts: only the web UI publishes a port, on 127.0.0.1, the one in the link ---
    containers = client.containers.list(all=True, filters={"label": f"pb.campaign={cfg.campaign}"})
    by_role = {c.labels["pb.role"]: c for c in containers}
    assert {"erp", "web", "netns"} <= set(by_role), sorted(by_role)
    published = {role: c.attrs["HostConfig"]["PortBindings"] for role, c in by_role.items() if c.attrs["HostConfig"]["PortBindings"]}
    assert published == {"web": {"8090/tcp": [{"HostIp": "127.0.0.1", "HostPort": ""}]}}, published
    web = by_role["web"]
    web.reload()
    bound = web.attrs["NetworkSettings"]["Ports"]
    assert bound == {"8090/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(urlsplit(ui).port)}]}, bound
    nets = web.attrs["NetworkSettings"]["Networks"]
    assert sorted(n.rsplit("-", 1)[-1] for n in nets) == ["attempt", "web"], sorted(nets)  # never the control network
    assert not web.attrs["HostConfig"]["CapAdd"] and web.attrs["HostConfig"]["ReadonlyRootfs"]
    assert "agent" not in by_role  # no agent container: the person works the turns

    # -- the person signs in; turn 1's page is built from the agent API (the ERP reached by name) ---
    person = httpx.Client(base_url=ui, trust_env=False, timeout=30)
    login = urlsplit(info["login_url"])
    assert person.get(f"{login.path}?{login.query}").status_code == 303
    home = _wait("turn 1 on the page", lambda: _page(person, "/"), 120, worker, outcome)
    assert "Request 1." in home and "Business date <strong>2026-10-08</strong>" in home, home[:2000]
    assert person.get("/login?key=not-the-key").status_code == 403

    # -- inside the web UI's container: no route out, no control API; the ERP's agent API open ----
    erp = by_role["erp"]
    erp_nets = erp.attrs["NetworkSettings"]["Networks"]
    control_ip = next(v["IPAddress"] for k, v in erp_nets.items() if k.endswith("-control"))
    web_net = next(k for k in nets if k.endswith("-web"))
    bridge_ip = client.networks.get(web_net).attrs["IPAM"]["Config"][0]["Gateway"]
    canary = socket.socket()
    canary.bind(("0.0.0.0", 0))  # a host service on every address, the web bridge's included
    canary.listen(8)
    port = canary.getsockname()[1]
    try:
        targets = [f"{erp.name}:{cfg.erp_agent_port}", f"{control_ip}:{cfg.erp_control_port}", f"{bridge_ip}:{port}"]
        code, out = web.exec_run(["/opt/venv/bin/python", "-c", PROBE, *targets], user="1001:1001")
        assert code == 0, out
        probe = json.loads(out.decode().strip().splitlines()[-1])
        # Positive control: the host reaches the canary through the very address the UI tried.
        with socket.create_connection((bridge_ip, port), timeout=5):
            pass
    finally:
        canary.close()
    assert probe[targets[0]] == "open", probe  # positive control: the ERP's agent API, by its container's name
    assert probe[targets[1]] != "open", probe  # the control API: not on its network, no route to it
    assert probe[targets[2]] != "open", probe  # the host: firewalled on the web bridge
    assert probe["default_route"] is False, probe

    # -- End turn, twice; the attempt finishes and says who worked it --------------------------------
    assert person.post("/turn/end", data={"turn": "1"}).status_code == 303
    page2 = _wait("turn 2 on the page", lambda: (p := _page(person, "/")) and "Request 2." in p and p, 120, worker, outcome)
    assert "Business date <strong>2026-10-09</strong>" in page2  # the clock advanced between the turns
    assert person.post("/turn/end", data={"turn": "2"}).status_code == 303
    worker.join(300)
    assert not worker.is_alive(), "the attempt did not finish after the last turn"
    with pytest.raises(httpx.HTTPError):  # torn down: the published port is gone with the attempt
        person.get("/healthz")
