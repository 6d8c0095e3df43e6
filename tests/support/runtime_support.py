"""Shared helpers of the runtime tests: images, a small fake scenario, leftover checks, probes.

The fake scenario is built from the shared test company (tests/erp_company.py): a real SQLite
database served by the real bb-erp, a two-turn script and a `policies.py` with a `null` policy,
so the lifecycle runs end to end without any task pack.
"""
from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
sys.path.insert(0, str(Path(__file__).resolve().parent))

TEST_CAMPAIGN = "pytest-runtime"


def docker_client():
    """A client, or skip the test when there is no engine."""
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no docker engine: {exc}")
    return client


def resolve_images(request) -> Any:
    """The session `images` fixture of tests/conftest.py when present, else build them directly."""
    try:
        return request.getfixturevalue("images")
    except pytest.FixtureLookupError:
        from orchestrator.images import ensure_images

        return ensure_images()


def leftovers(client, attempt_prefix: str = "pb-") -> list[str]:
    """Engine objects named like the runtime's that still exist. Listed through the engine's list
    call alone (`containers.list` inspects each one again, and one that another run removed in
    between raised NotFound here)."""
    names = [n.lstrip("/") for c in client.api.containers(all=True) for n in (c.get("Names") or [])[:1]]
    out = [f"container {name}" for name in names if name.startswith(attempt_prefix)]
    out += [f"network {n.name}" for n in client.networks.list() if n.name.startswith(attempt_prefix)]
    out += [f"volume {v.name}" for v in client.volumes.list() if v.name.startswith(attempt_prefix)]
    return out


def remove_campaign(client, campaign: str) -> list[str]:
    """Remove every container, network and volume labelled with `campaign`; the names of what
    was there (a test asserts it is empty: the runtime should have removed it all)."""
    left = list(client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"}))
    left += client.networks.list(filters={"label": f"pb.campaign={campaign}"})
    left += client.volumes.list(filters={"label": f"pb.campaign={campaign}"})
    for o in left:
        try:
            o.remove(force=True) if hasattr(o, "stop") else o.remove()
        except Exception:  # noqa: BLE001
            pass
    return [o.name for o in left]


def kill_during_turn(client, campaign: str, role: str, suffix: str = "") -> tuple[threading.Thread, list[str]]:
    """Start a thread that, once an agent container of `campaign` runs, kills its containers of
    `role` whose name ends with `suffix`; returns the thread and the names it killed."""
    killed: list[str] = []

    def killer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            if client.containers.list(filters={"label": [f"pb.campaign={campaign}", "pb.role=agent"]}):
                for c in client.containers.list(filters={"label": [f"pb.campaign={campaign}", f"pb.role={role}"]},
                                                ignore_removed=True):
                    if c.name.endswith(suffix):
                        c.kill()
                        killed.append(c.name)
            time.sleep(0.2)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    return thread, killed


POLICIES = textwrap.dedent(
    '''
    """Policies of the fake test task."""
    import os, time


    def null(turn, client, workspace, context):
        pass


    def writer(turn, client, workspace, context):
        (workspace / f"note-{turn}.txt").write_text("hello")


    def sleeper(turn, client, workspace, context):
        time.sleep(600)


    def crasher(turn, client, workspace, context):
        raise RuntimeError("the policy crashed")


    def napper(turn, client, workspace, context):
        time.sleep(6)


    def inspector(turn, client, workspace, context):
        """Report what the turn's environment looks like, into the workspace."""
        import json, socket, subprocess
        from urllib.parse import urlparse

        def can_write(folder):
            probe = os.path.join(folder, ".pb-probe")
            try:
                with open(probe, "w") as fh:
                    fh.write("x")
                os.unlink(probe)
                return True
            except OSError:
                return False

        def read(path):
            try:
                with open(path, "rb") as fh:
                    return fh.read().replace(b"\\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                return None

        def tcp(host, port):
            s = socket.socket()
            s.settimeout(2)
            try:
                s.connect((host, port))
                return "open"
            except OSError as exc:
                return f"{type(exc).__name__}:{exc.errno}"
            finally:
                s.close()

        status = dict(l.split(":", 1) for l in read("/proc/self/status").splitlines() if ":" in l)
        procs = [read(f"/proc/{p}/cmdline") for p in os.listdir("/proc") if p.isdigit()]
        erp = urlparse(os.environ["ERP_URL"])
        routes = read("/proc/net/route").split("\\n")[1:]
        report = {
            "uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
            "cap_eff": status["CapEff"].strip(), "no_new_privs": status.get("NoNewPrivs", "").strip(),
            "env": sorted(os.environ), "home": os.environ.get("HOME"), "cwd": os.getcwd(),
            "writable": {p: can_write(p) for p in ["/", "/etc", "/usr", "/opt", "/workspace", "/home/agent", "/tmp",
                                                   "/turn", "/turn/out", "/opt/policy"]},
            "home_listing": sorted(os.listdir(os.environ["HOME"])),
            "pid1": read("/proc/1/cmdline"), "procs": procs,
            "pids_max": read("/sys/fs/cgroup/pids/pids.max") or read("/sys/fs/cgroup/pids.max"),
            "mem_max": read("/sys/fs/cgroup/memory/memory.limit_in_bytes") or read("/sys/fs/cgroup/memory.max"),
            "default_route": any(r.split()[1:2] == ["00000000"] for r in routes if r.strip()),
            "agent_api": tcp(erp.hostname, erp.port),
            "control_port_on_agent_address": tcp(erp.hostname, 8081),
            "data_visible": os.path.exists("/data/erp") or os.path.exists("/data/scenario.db"),
            "docker_sock": os.path.exists("/var/run/docker.sock"),
            "ipv6_disabled": read("/proc/sys/net/ipv6/conf/all/disable_ipv6"),
            "inet6": read("/proc/net/if_inet6"),
        }
        # Leave a process behind on purpose: the next turn must not see it.
        with open(os.path.join(os.environ["HOME"], "dropping"), "w") as fh:
            fh.write("from turn %d" % turn)
        subprocess.Popen(["sleep", "1000"], start_new_session=True)
        (workspace / f"inspect-{turn}.json").write_text(json.dumps(report, indent=1))


    def stubborn(turn, client, workspace, context):
        """Ignores the entrypoint's stop requests: only the runtime's kill ends it."""
        while True:
            try:
                time.sleep(100)
            except BaseException:
                continue


    POLICIES = {"neg:stubborn": stubborn, "null": null, "oracle": writer, "neg:sleep": sleeper, "neg:crash": crasher,
                "neg:nap": napper, "neg:inspect": inspector}
    '''
)


def fake_scenario(tmp: Path, *, turns: int = 2, budget_s: float = 60) -> tuple[Any, Any]:
    """(scenario, task) duck-typed like orchestrator.scenarios.folder.Scenario and tasks' TaskPack."""
    from erp_company import build_company

    tmp.mkdir(parents=True, exist_ok=True)
    co = build_company(tmp)
    db = getattr(co.builder, "db", None)
    if db is not None and hasattr(db, "close"):
        db.close()
    (tmp / "world.json").write_text("{}")
    hb = tmp / "handbook"
    hb.mkdir()
    (hb / "policy.md").write_text("# Payment policy\nTwo approvals above 10,000.\n")
    (hb / "forms").mkdir()
    (hb / "forms" / "vendor.md").write_text("vendor form\n")
    pol = tmp / "policies.py"
    pol.write_text(POLICIES)
    user = "ap_clerk" if "ap_clerk" in co.tokens else sorted(co.tokens)[0]
    meta = {
        "task": "fake", "seed": 0, "company": "Test Valve Co.", "start_date": "2026-10-08",
        "grading_date": "2026-10-13", "agent_user": user, "agent_name": "Alex Clerk",
        "agent_title": "AP clerk", "agent_token": co.tokens[user], "agent_token_id": f"tok-{user}",
    }  # fmt: skip
    script = [
        {"n": n, "date": f"2026-10-{7 + n:02d}", "from_user": "controller", "from_name": "Priya Raman",
         "from_title": "Controller", "request": f"Request {n}.", "budget_s": budget_s}
        for n in range(1, turns + 1)
    ]  # fmt: skip
    (tmp / "scenario.json").write_text(json.dumps(meta))
    scenario = SimpleNamespace(dir=tmp, db=co.path, world=tmp / "world.json", handbook_dir=hb, meta=meta, turns=script, truth={})
    task = SimpleNamespace(slug="fake", version=1, fault_profiles={}, policies_module=pol)
    return scenario, task


PROBE = textwrap.dedent(
    '''
    import json, socket, sys
    out = {}
    for target in sys.argv[1:]:
        host, port = target.rsplit(":", 1)
        s = socket.socket(); s.settimeout(2.0)
        try:
            s.connect((host, int(port))); out[target] = "open"
        except OSError as exc:
            out[target] = type(exc).__name__ + ":" + str(exc.errno)
        finally:
            s.close()
    routes = open("/proc/net/route").read().split("\\n")[1:]
    out["default_route"] = any(r.split()[1:2] == ["00000000"] for r in routes if r.strip())
    print(json.dumps(out))
    '''
)


def probe_from(client, image: str, network: str, targets: list[str], labels: dict[str, str]) -> dict[str, Any]:
    """Run a short-lived container on `network` (or `container:<id>`: in that container's
    network namespace) that tries TCP connects to `targets` and reports its default route."""
    from testcontainers.core.container import DockerContainer

    where = {"network_mode": network} if network.startswith("container:") else {"network": network}
    probe = DockerContainer(image).with_command(targets).with_kwargs(
        entrypoint=["/opt/venv/bin/python", "-c", PROBE], labels=labels, user="1000:1000", **where)
    try:
        probe.start()
        c = probe.get_wrapped_container()
        c.wait(timeout=60)
        text = c.logs(stdout=True, stderr=False).decode().strip().splitlines()
        if not text:
            raise AssertionError(c.logs().decode())
        return json.loads(text[-1])
    finally:
        probe.stop()
