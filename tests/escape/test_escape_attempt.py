"""The escape suite (issue 4): probes run from inside the agent container of a live attempt.

Two live attempts, A and B, are opened through the docker backend's own API from the real
`payment-run` scenario snapshot (networks, volumes, ERP container, workspace — exactly what
`run_attempt` sets up), and A's agent turns run `tests/escape_probe.py` as a command system
through `Sandbox.run_turn`. Every probe must fail from there, and each has a positive control:
the same probe script, against a target the test set up itself and left unprotected, succeeds.

Probes never send traffic beyond this machine: targets are the test's own containers, networks
and a canary service on the host; "no route out" is read from the routing table, and the one
lookup of a public name is made only when that table has no route beyond the attempt subnet.
"""
from __future__ import annotations

import ipaddress
import threading
import time

import httpx
import pytest
from escape_support import Canary, EscapeLab, ForbiddenSet, escape_scenario, host_ipv4_addresses

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

LISTEN_PORT = 9000  # B's agent listens here during the network probe
LEFTOVER_PORT = 47999  # a listener a turn tries to leave behind
PSEUDO_FS = {"proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "overlay"}
DISK_MOUNTS = {"/", "/usr/sbin/docker-init", "/workspace", "/turn", "/etc/resolv.conf", "/etc/hostname", "/etc/hosts", "/opt/escape/escape_probe.py"}
ALLOWED_WRITES = ("/workspace", "/home/agent", "/tmp", "/turn/out", "/dev/shm", "/dev/mqueue")


@pytest.fixture(scope="module")
def scenario():
    return escape_scenario("payment-run", 0)


@pytest.fixture(scope="module")
def lab(docker_client, images, scenario, tmp_path_factory):
    """Attempts A and B live side by side, a canary on the host; everything removed at the end."""
    lab = EscapeLab(docker_client, images, scenario, tmp_path_factory.mktemp("escape"))
    problems: list[str] = []
    try:
        lab.canary = Canary()
        lab.a = lab.open_attempt("A")
        lab.b = lab.open_attempt("B")
        yield lab
    finally:
        problems = lab.close()
    assert not problems, problems


def _ok(run, lab, live) -> None:
    assert run.exit_code == 0 and not run.timed_out, f"probe turn failed: {run}\n{lab.turn_diagnostics(live)}"


def _turn_in_thread(lab, live, spec, *, budget_s: float, start: bool = True) -> tuple[threading.Thread, dict]:
    """A turn of `live` in a thread; the dict gets `run` and `report` (or `error`)."""
    out: dict = {}

    def go() -> None:
        try:
            out["run"], out["report"] = lab.turn(live, spec, budget_s=budget_s)
        except Exception as exc:  # noqa: BLE001 — asserted by the test
            out["error"] = repr(exc)

    t = threading.Thread(target=go, daemon=True)
    if start:
        t.start()
    return t, out


# -- network ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def net(lab, docker_client):
    """Run the network probes once: A's agent turn, and the positive controls around it."""
    a, b = lab.a, lab.b
    canary = lab.canary
    host_addrs = host_ipv4_addresses()
    docker0 = host_addrs.get("docker0") or "172.17.0.1"
    a_att, a_ctl = a.sandbox.blocks["attempt"], a.sandbox.blocks["control"]
    b_att, b_ctl = b.sandbox.blocks["attempt"], b.sandbox.blocks["control"]
    a_erp, b_erp = a.sandbox.addresses["erp"], b.sandbox.addresses["erp"]
    cfg = lab.config
    ports = (cfg.erp_agent_port, cfg.erp_control_port)

    # B's agent listens (a turn of B, in a thread) while A probes.
    t, b_listen = _turn_in_thread(lab, b, {"mode": "listen", "port": LISTEN_PORT, "max_s": 240}, budget_s=300)
    b_agent_ip = b.agent_ip()
    b_targets = [f"{b_erp['attempt']}:{cfg.erp_agent_port}", f"{b_erp['control']}:{cfg.erp_control_port}", f"{b_agent_ip}:{LISTEN_PORT}"]
    b_names = [b.erp_name, b.netns.name]

    # Positive control 1: a container the test attaches to B's attempt network reaches B.
    pc_b = lab.control_probe(
        {"mode": "network", "wait_open": [f"{b_agent_ip}:{LISTEN_PORT}"], "tcp": b_targets, "names": b_names},
        network=b.sandbox.networks["attempt"].name,
    )

    # The probe: from A's agent, every address and port of A's ERP, the canary through every
    # host address, B's ERP and agent, names, routes.
    erp_addrs = a.erp_all_addresses()
    canary_targets = sorted({f"{ip}:{canary.port}" for ip in [a_att.gateway, a_ctl.gateway, b_att.gateway, b_ctl.gateway, docker0, *host_addrs.values()]})
    spec = {
        "mode": "network",
        "control_token": a.control_token,
        "scan_all_ports": erp_addrs,
        "control": [f"{ip}:{p}" for ip in erp_addrs for p in ports],
        "http": canary_targets,
        "tcp": b_targets,
        "names": [a.erp_name, *b_names],
        "dns_public": ["example.com"],
        "local_subnets_v4": [a_att.subnet],
    }
    hits_before = len(canary.hits)
    a_run, a_report = lab.turn(a, spec, budget_s=300)
    hits_during_a = canary.hits[hits_before:]

    # Stop B's listener from inside B's own turn container (it shares B's agent namespace).
    b_turn = b.sandbox.containers.get(f"turn-{b.turns}")
    if b_turn is not None:
        b_turn.exec_run(["/opt/venv/bin/python", "-c", f"import socket; s=socket.create_connection(('127.0.0.1', {LISTEN_PORT}), 5); s.sendall(b'STOP')"])
    t.join(120)

    # Positive control 2: an ordinary bridge network reaches the host canary via docker0 and its gateway.
    plain_block, plain_net = lab.plain_network()
    pc_plain = lab.control_probe(
        {"mode": "network", "http": [f"{docker0}:{canary.port}", f"{plain_block.gateway}:{canary.port}"]},
        network=plain_net.name,
    )

    # Positive control 3: a container deliberately attached to A's control network reaches the
    # control API with the token (the same scan and request the agent made).
    pc_control = lab.control_probe(
        {"mode": "network", "control_token": a.control_token, "scan_all_ports": [a_erp["control"]],
         "control": [f"{a_erp['control']}:{cfg.erp_control_port}"], "http": [f"{a_ctl.gateway}:{canary.port}"]},
        network=a.sandbox.networks["control"].name,
    )
    # Positive control 4: the host reaches the control API with the token (and only with it).
    with_token = httpx.get(f"{a.endpoints.control_url}/control/health", headers={"Authorization": f"Bearer {a.control_token}"}, timeout=10, trust_env=False)
    without = httpx.get(f"{a.endpoints.control_url}/control/health", timeout=10, trust_env=False)
    return {
        "a_run": a_run, "a": a_report, "erp_addrs": erp_addrs, "canary_targets": canary_targets, "hits_during_a": hits_during_a,
        "b_targets": b_targets, "b_names": b_names, "b_listen": b_listen, "b_agent_ip": b_agent_ip,
        "pc_b": pc_b, "pc_plain": pc_plain, "pc_control": pc_control, "docker0": docker0, "plain_gw": plain_block.gateway, "control_gw": a_ctl.gateway,
        "host_with_token": with_token.status_code, "host_without_token": without.status_code,
    }  # fmt: skip


def test_control_api_unreachable_on_every_erp_address_and_port(lab, net):
    _ok(net["a_run"], lab, lab.a)
    a, cfg = net["a"], lab.config
    erp = lab.a.sandbox.addresses["erp"]
    # The ERP has exactly its two addresses (attempt, control), and the probe saw both.
    assert set(lab.a.erp_ipv4().values()) == {erp["attempt"], erp["control"]}
    assert {erp["attempt"], erp["control"]} <= set(net["erp_addrs"])
    # Full scans: on the attempt address only the agent API answers; the control address is unreachable.
    scans = a["scans"]
    assert scans[erp["attempt"]]["open"] == [cfg.erp_agent_port], scans[erp["attempt"]]
    for addr in net["erp_addrs"]:
        if addr != erp["attempt"]:
            assert scans[addr]["open"] == [], (addr, scans[addr])
    for addr, scan in scans.items():
        for port, answer in scan["control_api"].items():
            assert answer.get("status") != 200, (addr, port, answer)
    for target, answer in a["control_api"].items():
        assert answer.get("status") != 200, (target, answer)
    # Positive controls: the scanner finds the control API where it is reachable, and it answers.
    pc = net["pc_control"]
    assert pc["scans"][erp["control"]]["open"] == [cfg.erp_control_port], pc
    assert pc["control_api"][f"{erp['control']}:{cfg.erp_control_port}"]["status"] == 200, pc
    assert net["host_with_token"] == 200 and net["host_without_token"] == 401


def test_host_canary_unreachable_through_bridge_and_docker0(lab, net):
    _ok(net["a_run"], lab, lab.a)
    a = net["a"]
    secret = lab.canary.secret
    for target in net["canary_targets"]:
        answer = a["http"][target]
        assert "status" not in answer, f"host canary reachable at {target}: {answer}"
    assert net["hits_during_a"] == [], f"the canary was reached from the agent: {net['hits_during_a']}"
    # Positive control: from an ordinary bridge the same request reaches it via docker0 and the bridge.
    pc = net["pc_plain"]["http"]
    for target in (f"{net['docker0']}:{lab.canary.port}", f"{net['plain_gw']}:{lab.canary.port}"):
        assert pc[target].get("status") == 200 and secret in pc[target]["body"], (target, pc)


    # ... and an internal network whose bridge holds a host address (the control network) reaches
    # it through that address: the bridge-address path the agent's probe tried is a real one.
    via_bridge = net["pc_control"]["http"][f"{net['control_gw']}:{lab.canary.port}"]
    assert via_bridge.get("status") == 200 and secret in via_bridge["body"], via_bridge


def test_second_attempt_unreachable(lab, net):
    _ok(net["a_run"], lab, lab.a)
    a = net["a"]
    for target in net["b_targets"]:
        assert a["tcp"][target] != "open", f"attempt B reachable from A's agent at {target}: {a['tcp']}"
    for name in net["b_names"]:
        assert "resolved" not in a["names"][name], (name, a["names"][name])
    # B's listener never saw A's agent (only the positive control and the STOP from B itself).
    b_report = net["b_listen"].get("report") or {}
    a_agent_ip = lab.a.agent_ip()
    assert b_report.get("stopped") is True, net["b_listen"]
    assert a_agent_ip not in {p["addr"] for p in b_report["peers"]}, b_report
    # Positive control: a container on B's attempt network reaches B's ERP and agent, and
    # resolves B's names.
    pc = net["pc_b"]
    b_erp = lab.b.sandbox.addresses["erp"]
    assert pc["tcp"][f"{b_erp['attempt']}:{lab.config.erp_agent_port}"] == "open", pc
    assert pc["tcp"][f"{net['b_agent_ip']}:{LISTEN_PORT}"] == "open", pc
    assert "resolved" in pc["names"][lab.b.erp_name], pc


def test_no_route_and_no_name_resolution_beyond_the_attempt_network(lab, net):
    _ok(net["a_run"], lab, lab.a)
    r = net["a"]["routes"]
    subnet = ipaddress.ip_network(lab.a.sandbox.blocks["attempt"].subnet)
    assert not r["v4_default"] and not r["v6_default"], r
    assert r["v4_gateways"] == [], r
    for route in r["v4"]:
        assert ipaddress.ip_network(f"{route['dest']}/{route['mask']}").subnet_of(subnet), route
    assert r["v6"] == [], r
    public = net["a"]["dns_public"]["example.com"]
    assert "skipped" not in public, public
    # Whatever the host's resolver setup, the embedded DNS may only forward onto the attempt
    # bridge, to an address nobody holds.
    holder = lab.a.sandbox.containers["netns"]
    holder.reload()
    assert holder.attrs["HostConfig"]["Dns"] == [lab.a.sandbox.blocks["attempt"].gateway]
    assert "resolved" not in public, f"a public name resolved from the agent: {public}"
    # Positive controls: the resolver does answer inside the attempt (A's own ERP by name) and the
    # route reader sees a default route where there is one (the ordinary bridge).
    own = net["a"]["names"][lab.a.erp_name]
    assert own.get("resolved") == [lab.a.sandbox.addresses["erp"]["attempt"]], own
    assert net["pc_plain"]["routes"]["v4_default"] is True, net["pc_plain"]["routes"]


# -- secrets, files, writes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def forbidden(scenario):
    from orchestrator.config import REPO_ROOT

    return ForbiddenSet.of(scenario, REPO_ROOT)


def test_no_secrets_no_scenario_no_socket_no_writes(lab, scenario, forbidden, docker_client):
    a, b = lab.a, lab.b
    import hashlib

    token_hashes = [hashlib.sha256(x.control_token.encode()).hexdigest() for x in (a, b)]
    spec = {"mode": "secrets", "token_sha256": token_hashes, "forbidden_sha256": forbidden.hashes,
            "paths": ["/data", "/data/erp", "/opt/policy"]}  # fmt: skip
    run, rep = lab.turn(a, spec, budget_s=300)
    _ok(run, lab, a)
    assert rep["files_scanned"] > 1000, rep["files_scanned"]  # the walk really covered the image
    # The control token: not in the environment, any process, or any file.
    assert rep["token_env"] == [] and rep["token_proc"] == [] and rep["token_files"] == [], rep
    # No process of the ERP (or anything else) besides the turn's own.
    assert not [p for p in rep["processes"] if "erp_service" in p], rep["processes"]
    # No scenario database, world.json, truth.json, reference, task or ERP code anywhere.
    assert rep["forbidden"] == [] and rep["sqlite"] == [], (rep["forbidden"], rep["sqlite"])
    assert not any(rep["paths_exist"].values()), rep["paths_exist"]
    # No Docker socket (no socket at all except the probe's own).
    assert not any(rep["docker_socket_paths"].values()), rep["docker_socket_paths"]
    assert rep["sockets"] == [rep["self_socket"]], rep["sockets"]
    # Read-only root; writable only the workspace, home, the turn's out/ and per-container tmpfs.
    assert rep["root_mount"].split(",")[0] == "ro", rep["root_mount"]
    outside = [d for d in rep["writable_dirs"] if not any(d == p or d.startswith(p + "/") for p in ALLOWED_WRITES)]
    assert outside == [], outside
    outside_files = [f for f in rep["writable_files"] if not any(f.startswith(p + "/") for p in ALLOWED_WRITES)]
    assert outside_files == [], outside_files
    # Mounts from the host's disks: only this attempt's volumes, the probe, and the engine's
    # read-only network files; nothing of attempt B.
    disk = [m for m in rep["mounts"] if m["fstype"] not in PSEUDO_FS]
    assert {m["point"] for m in disk} <= DISK_MOUNTS, disk
    assert not [m for m in rep["mounts"] if b.sandbox.prefix in m["root"]], rep["mounts"]
    for m in disk:
        if "/volumes/" in m["root"]:
            assert a.sandbox.prefix in m["root"], m
        if m["point"] not in ("/workspace", "/turn"):
            assert m["options"].split(",")[0] == "ro", m
    # The ERP container does not show the token in its configuration either.
    a.sandbox.containers["erp"].reload()
    assert a.control_token not in str(a.sandbox.containers["erp"].attrs)

    # Positive control: the same probe in a container where the secrets were planted finds each.
    sdir = scenario.dir
    refs = sorted(p for p in scenario.reference_dir.iterdir() if p.is_file())
    plant = {"scenario.db": (sdir / "scenario.db").read_bytes(), "world.json": (sdir / "world.json").read_bytes(),
             "truth.json": (sdir / "truth.json").read_bytes(), "reference.csv": refs[0].read_bytes(),
             "control.token": a.control_token.encode()}  # fmt: skip
    pc = lab.control_probe(
        spec,
        read_only=False,
        environment={"LEAKED": a.control_token},
        plant=plant,
        background_argv=["/opt/venv/bin/python", "-c", "import time; time.sleep(120)", a.control_token],
    )
    assert pc["token_env"] and "/opt/planted/control.token" in pc["token_files"], pc
    assert any(p.endswith("/cmdline") for p in pc["token_proc"]) and any(p.endswith("/environ") for p in pc["token_proc"]), pc["token_proc"]
    found = {f["is"] for f in pc["forbidden"]}
    assert {"scenario/scenario.db", "scenario/world.json", "scenario/truth.json", f"reference/{refs[0].name}"} <= found, found
    assert "/opt/planted/scenario.db" in pc["sqlite"], pc["sqlite"]
    assert pc["self_socket"] in pc["sockets"], pc["sockets"]
    assert [f for f in pc["writable_files"] if f.startswith("/opt/planted/")], pc["writable_files"]
    assert pc["root_mount"].split(",")[0] == "rw" and "/var/tmp" in pc["writable_dirs"], (pc["root_mount"], pc["writable_dirs"])
    # The path the probe checks is where this machine's engine socket really is.
    base = docker_client.api.base_url
    assert "docker.sock" in base or base.startswith("http+docker://localhost"), base
    from pathlib import Path

    assert Path("/var/run/docker.sock").exists()


# -- processes ----------------------------------------------------------------------------------


def test_nothing_survives_the_turn(lab):
    a = lab.a
    spec = {"marker": f"escape-leftover-{time.time_ns()}", "port": LEFTOVER_PORT,
            "marker_dirs": ["/tmp", "/dev/shm", "/home/agent", "/workspace"]}  # fmt: skip
    run, left = lab.turn(a, {"mode": "leave", **spec}, budget_s=60)
    _ok(run, lab, a)
    # Positive control: inside turn 1 the detached sleeper, its listener and the markers exist.
    now = left["now"]
    assert now["processes"] and now["listener"] == "open" and all(now["markers"].values()), now
    run2, after = lab.turn(a, {"mode": "check_left", **spec}, budget_s=60)
    _ok(run2, lab, a)
    later = after["now"]
    assert later["processes"] == [], f"a process of the previous turn survived: {later}"
    assert later["listener"] != "open", later
    # The workspace persists (the marker check can see persistence); nothing else does.
    assert later["markers"] == {"/tmp": False, "/dev/shm": False, "/home/agent": False, "/workspace": True}, later


def test_host_copies_never_follow_links(lab, tmp_path):
    """Links and FIFOs a turn leaves in the workspace or out/ are not followed by the host copies."""
    a = lab.a
    run, rep = lab.turn(a, {"mode": "plant_links", "out_dir": f"{lab.config.container_paths.turn_dir}/out"}, budget_s=60)
    _ok(run, lab, a)
    assert all(m.startswith("/") for m in rep["made"]), rep  # positive control: the links exist in the container
    out = a.paths.turn_dir(a.turns) / "out"
    dest = tmp_path / "ws"
    a.sandbox.copy_workspace(dest)
    copied = list(dest.rglob("*")) + list(out.rglob("*"))
    assert not [p for p in copied if p.is_symlink() or not (p.is_file() or p.is_dir())], copied
    assert not (dest / "link-passwd").exists() and not (out / "link-shadow").exists()
    skipped = (a.paths.logs / "workspace-skipped.txt").read_text()
    assert "link-passwd" in skipped and "fifo" in skipped, skipped
    assert (dest / "handbook").is_dir()  # the copy did run


# -- limits (last: the heaviest) ----------------------------------------------------------------


def test_fork_bomb_and_memory_hog_are_contained(lab):
    a, b = lab.a, lab.b
    cfg = lab.config
    b_thread, b_out = _turn_in_thread(lab, b, {"mode": "api", "seconds": 25, "path": "/periods?limit=1"}, budget_s=120, start=False)
    health_failures: list[str] = []
    timeline: list[tuple[float, float | str]] = []  # (wall time, latency or error) of B's health
    stop = threading.Event()

    def watch_b() -> None:
        while not stop.is_set():
            t0 = time.time()
            try:
                b.control.health(timeout_s=5)
                timeline.append((round(t0, 2), round(time.time() - t0, 3)))
            except Exception as exc:  # noqa: BLE001 — recorded and asserted below
                health_failures.append(f"at {t0:.2f}: {exc}")
                timeline.append((round(t0, 2), str(exc)[:60]))
            time.sleep(0.5)

    watcher = threading.Thread(target=watch_b, daemon=True)
    b_thread.start()
    watcher.start()
    time.sleep(2)  # B's turn is under way when the bomb goes off
    run, rep = lab.turn(a, {"mode": "bomb", "bomb_s": 6, "hog_factor": 2, "hog_timeout_s": 60}, budget_s=150)
    b_thread.join(180)
    stop.set()
    watcher.join(10)
    assert run.exit_code == 0 and not run.timed_out, f"{run}\n{lab.turn_diagnostics(a)}"
    # The fork bomb really ran into the pid limit (so it was a bomb), and the limit held.
    assert int(rep["pids_max"]) == cfg.agent_limits.pids, rep
    assert cfg.agent_limits.pids - 16 <= rep["pids_peak"] <= cfg.agent_limits.pids, rep
    assert rep["own_fork_refused"] is True, rep
    # The memory hog was killed at the memory limit instead of getting twice as much.
    assert int(rep["mem_max"]) == cfg.agent_limits.memory_bytes, rep
    assert rep["small_hog_returncode"] == 0 and rep["small_hog_stdout"] == "survived", rep
    assert rep["hog_returncode"] == -9 and rep["hog_stdout"] != "survived", rep
    # The neighbour: B's ERP stayed healthy throughout and B's turn completed normally.
    phases = {k: round(v, 2) for k, v in rep.items() if k.startswith("t_")}
    assert health_failures == [], (health_failures, phases, timeline, b_out)
    b_run, b_rep = b_out.get("run"), b_out.get("report")
    assert b_run is not None and b_run.exit_code == 0 and not b_run.timed_out, (b_out, lab.turn_diagnostics(b))
    assert b_rep["ok"] > 10 and b_rep["failed"] == [], b_rep
    # A's own ERP survived its agent's hog (the OOM killer stayed inside the agent container).
    assert a.sandbox.service_running("erp") and a.control.health(timeout_s=5)["ok"] is True
    assert b.sandbox.service_running("erp")


# -- credentials ---------------------------------------------------------------------------------


def test_tokens_cannot_be_forged_nor_taken_from_the_scenario(lab, scenario):
    """Every user's token secret as the generator derives it (forged from the public scheme) and
    as the scenario holds it is refused inside the attempt; the agent's own works (the control)."""
    import sqlite3

    from escape_probe import _generated_secret

    conn = sqlite3.connect(f"file:{scenario.db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT user_id, secret FROM tokens").fetchall()
    finally:
        conn.close()
    users, known = sorted({u for u, _ in rows}), [s for _, s in rows]
    agent = str(scenario.meta["agent_user"])
    # The threat is real: the scenario's secrets are the scheme's, so before re-keying a forger
    # holding its own token would have found the seed and everyone's token.
    assert _generated_secret(int(scenario.meta["seed"]), agent) == scenario.meta["agent_token"]
    spec = {"mode": "forge", "users": users, "try_seeds": [0, 1, 2], "seeds": 500, "known": known}
    run, report = lab.turn(lab.a, spec, budget_s=180)
    _ok(run, lab, lab.a)
    assert report["own_status"] == 200, report  # positive control: the agent's own token works
    assert report["own_seed_found"] is None, report  # its secret no longer gives the seed away
    assert report["forged_tried"] == 3 * len(users) and report["forged_accepted"] == [], report
    assert report["known_tried"] == len(known) > 0 and report["known_accepted"] == [], report


def test_engine_names_say_nothing_of_the_attempt(lab, scenario):
    """The ERP's reverse name (the engine's DNS: `<container>.<network>`) carries no seed, cell
    or run id (a sealed study's seed stays secret); the lookup itself works (the control)."""
    run, report = lab.turn(lab.a, {"mode": "names"}, budget_s=120)
    _ok(run, lab, lab.a)
    names = " ".join(report.get("reverse") or [])
    assert lab.a.sandbox.prefix in names, report  # positive control: the engine did answer with the name
    for secret in (lab.a.sandbox.ctx.attempt_id, f"-s{scenario.meta['seed']}-", "escape-a-", "payment-run"):
        assert secret not in names, (secret, report)
