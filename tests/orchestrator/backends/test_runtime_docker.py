"""The attempt lifecycle in real containers, on a small fake scenario served by the real bb-erp:
a full attempt leaves nothing behind; the agent container has the configuration the design
requires (user, capabilities, read-only root, fresh home, limits, init, no route, no control
port); the budget is enforced; an ERP killed mid-turn is an infra_error."""
from __future__ import annotations

import json
import threading
import time
import uuid

import docker.errors
import pytest
from repo_paths import SUPPORT_DIR
from runtime_support import (
    TEST_CAMPAIGN,
    docker_client,
    fake_scenario,
    kill_during_turn,
    remove_campaign,
    resolve_images,
)

from orchestrator.labels import object_prefix

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def client():
    return docker_client()


@pytest.fixture(scope="module")
def images(request, client):
    return resolve_images(request)


@pytest.fixture()
def runtime(tmp_path, client, images):
    """(config, backend) with a campaign label unique to the test; checks nothing is left."""
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"{TEST_CAMPAIGN}-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    yield cfg, DockerBackend(cfg, client=client)
    left = remove_campaign(client, campaign)
    assert not left, f"left behind: {left}"


def _run(cfg, backend, tmp_path, system: str, *, turns: int = 2, timeout: float | None = None, budget: float = 60, rep: int = 0):
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    scenario, task = fake_scenario(tmp_path / "scenario", turns=turns, budget_s=budget)
    spec = AttemptSpec(parse_cell(f"{system}:fake"), 0, rep=rep, timeout_override_s=timeout)
    return run_attempt(spec, backend=backend, config=cfg, scenario=scenario, task=task, grade=False)


def test_null_attempt_end_to_end_leaves_nothing(runtime, tmp_path, client, monkeypatch):
    from orchestrator.attempt import runner
    from orchestrator.services.erp import ErpLaunch

    cfg, backend = runtime
    made: list[str] = []  # the control token the attempt gave its ERP

    def recording_launch(**kwargs):
        made.append(kwargs["control_token"])
        return ErpLaunch(**kwargs)

    monkeypatch.setattr(runner, "ErpLaunch", recording_launch)
    result = _run(cfg, backend, tmp_path, "null")
    monkeypatch.undo()
    rec = result.record
    assert rec["outcome"] == "graded", rec.get("error")
    assert rec["isolation"] == "docker"
    assert [t["exit_code"] for t in rec["turns"]] == [0, 0]
    p = result.paths
    assert p.final_db.stat().st_size > 0 and rec["hashes"]["final_db"] and rec["hashes"]["canonical_db"]
    assert (p.workspace / "handbook" / "policy.md").read_text().startswith("# Payment policy")
    assert (p.workspace / "handbook" / "forms" / "vendor.md").exists()
    assert (p.turn_dir(1) / "prompt.txt").read_text().startswith("You work at Test Valve Co.")
    assert json.loads((p.turn_dir(2) / "context.json").read_text())["turn"] == 2
    assert (p.turn_dir(1) / "out" / "turn.json").exists()
    assert p.audit_jsonl.exists() and p.faults_jsonl.exists() and p.erp_log.read_text().count('"ready"') == 1
    assert len(p.turns_jsonl.read_text().splitlines()) == 2
    # result.json exists and was written last.
    others = [x.stat().st_mtime for x in p.root.rglob("*") if x.is_file() and x != p.result_json]
    assert p.result_json.stat().st_mtime >= max(others) - 1e-3
    attempt = json.loads(p.attempt_json.read_text())
    assert attempt["isolation"] == "docker" and attempt["backend"]["images"]["agent"]["tag"] == cfg.images.agent
    # The control token appears in no record the attempt wrote.
    tokens = [t.encode() for t in made if t]
    assert len(tokens) == 1, "the attempt's one control token was not seen: the check below would check nothing"
    leaked = [str(x.relative_to(p.root)) for x in p.root.rglob("*") if x.is_file() and any(t in x.read_bytes() for t in tokens)]
    assert not leaked, f"a control token is written in {leaked}"
    assert not [x for x in client.containers.list(all=True) if x.name.startswith(object_prefix(result.run_id))]


def test_agent_container_configuration(runtime, tmp_path):
    cfg, backend = runtime
    result = _run(cfg, backend, tmp_path, "neg:inspect")
    rec = result.record
    assert rec["outcome"] == "graded", rec.get("error")
    r1 = json.loads((result.paths.workspace / "inspect-1.json").read_text())
    r2 = json.loads((result.paths.workspace / "inspect-2.json").read_text())
    assert (r1["uid"], r1["gid"], r1["euid"]) == (1000, 1000, 1000)
    assert int(r1["cap_eff"], 16) == 0, r1["cap_eff"]
    assert r1["no_new_privs"] == "1"
    assert r1["cwd"] == "/workspace" and r1["home"] == "/home/agent"
    w = r1["writable"]
    assert w["/workspace"] and w["/home/agent"] and w["/tmp"] and w["/turn/out"]
    assert not any(w[p] for p in ["/", "/etc", "/usr", "/opt", "/turn", "/opt/policy"]), w
    assert {"ERP_URL", "ERP_TOKEN", "TURN_BUDGET_S", "HOME", "WORKSPACE"} <= set(r1["env"])
    assert not [k for k in r1["env"] if "CONTROL" in k or k.startswith("BBERP")], r1["env"]
    assert "init" in (r1["pid1"] or ""), r1["pid1"]
    assert int(r1["pids_max"]) == cfg.agent_limits.pids
    assert int(r1["mem_max"]) == cfg.agent_limits.memory_bytes
    assert r1["default_route"] is False
    assert r1["agent_api"] == "open" and r1["control_port_on_agent_address"] != "open"
    assert not r1["data_visible"] and not r1["docker_sock"]
    assert r1["ipv6_disabled"] == "1" and not r1["inet6"], (r1["ipv6_disabled"], r1["inet6"])
    # Turn 2 runs in a fresh container: a fresh home, and turn 1's leftover process is gone.
    assert r2["home_listing"] == []
    assert not [p for p in r2["procs"] if p and p.startswith("sleep 1000")], r2["procs"]


def test_budget_is_enforced(runtime, tmp_path):
    cfg, backend = runtime
    t0 = time.monotonic()
    result = _run(cfg, backend, tmp_path, "neg:sleep", turns=1, timeout=3)
    rec = result.record
    assert rec["outcome"] == "agent_error", rec
    assert rec["turns"][0]["timed_out"] is True
    assert "ran out of time" in rec["error"]["message"]
    assert not rec["passed"]
    assert time.monotonic() - t0 < 3 + cfg.turn_hard_grace_s + 40


def test_policy_crash_is_an_agent_error(runtime, tmp_path):
    cfg, backend = runtime
    result = _run(cfg, backend, tmp_path, "neg:crash", turns=1)
    rec = result.record
    assert rec["outcome"] == "agent_error" and rec["turns"][0]["exit_code"] == 1
    assert "the policy crashed" in (result.paths.turn_dir(1) / "out" / "traceback.txt").read_text()


def test_erp_killed_mid_turn_is_infra_error(runtime, tmp_path, client):
    cfg, backend = runtime
    t, killed = kill_during_turn(client, cfg.campaign, "erp")
    result = _run(cfg, backend, tmp_path, "neg:nap", turns=2)
    t.join(5)
    rec = result.record
    assert killed, "the test never saw the agent container"
    assert rec["outcome"] == "infra_error", rec
    err = rec["error"]
    assert err["phase"] == "turn" and err["exception"] == "ErpUnhealthy"
    pm = [p for p in err["post_mortem"] if p["name"].endswith("-erp")]
    assert pm and pm[0]["status"] == "exited" and pm[0]["exit_code"] == 137, err["post_mortem"]
    assert not rec["passed"] and len(rec["turns"]) == 1


def test_runtime_kills_a_turn_that_ignores_its_budget(tmp_path, client, images):
    """A turn that survives the entrypoint's own budget handling is killed at the hard deadline."""
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    campaign = f"{TEST_CAMPAIGN}-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=campaign, turn_hard_grace_s=3,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    try:
        result = _run(cfg, DockerBackend(cfg, client=client), tmp_path, "neg:stubborn", turns=1, timeout=2)
        turn = result.record["turns"][0]
        assert result.record["outcome"] == "agent_error"
        assert turn["timed_out"] and turn["killed_by_runtime"], turn
        assert turn["duration_s"] < 2 + 3 + cfg.kill_grace_s + 10
    finally:
        assert not client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"})
        assert not client.networks.list(filters={"label": f"pb.campaign={campaign}"})


SIGTERM_SCRIPT = '''
import sys, pathlib
sys.path.insert(0, {tests!r})
from runtime_support import fake_scenario
from orchestrator.attempt import AttemptSpec, run_attempt, sigterm_as_interrupt
from orchestrator.backends.docker.sandbox import DockerBackend
from orchestrator.cells import parse_cell
from orchestrator.config import Images, RuntimeConfig
cfg = RuntimeConfig.from_env(runs_root=pathlib.Path({runs!r}), campaign={campaign!r},
                             images=Images(erp={erp!r}, agent={agent!r}))
scenario, task = fake_scenario(pathlib.Path({scen!r}), turns=1, budget_s=300)
try:
    with sigterm_as_interrupt():
        run_attempt(AttemptSpec(parse_cell("neg:sleep:fake"), 0), backend=DockerBackend(cfg), config=cfg,
                    scenario=scenario, task=task, grade=False)
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(0)
'''


def test_sigterm_tears_everything_down(tmp_path, client, images):
    import signal
    import subprocess
    import sys

    campaign = f"{TEST_CAMPAIGN}-{uuid.uuid4().hex[:6]}"
    script = SIGTERM_SCRIPT.format(tests=str(SUPPORT_DIR), runs=str(tmp_path / "runs"), campaign=campaign,
                                   erp=images.erp.tag, agent=images.agent.tag, scen=str(tmp_path / "scenario"))
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not client.containers.list(filters={"label": [f"pb.campaign={campaign}", "pb.role=agent"]}):
            assert proc.poll() is None and time.monotonic() < deadline, "the attempt never reached its turn"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    left = client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"})
    left += client.networks.list(filters={"label": f"pb.campaign={campaign}"})
    left += client.volumes.list(filters={"label": f"pb.campaign={campaign}"})
    assert not left, [o.name for o in left]
    rec = json.loads(next((tmp_path / "runs").rglob("result.json")).read_text())
    assert rec["outcome"] == "infra_error" and rec["error"]["kind"] == "interrupted"


def test_a_keeper_lost_mid_attempt_is_infra_error(runtime, tmp_path, client):
    """The agent side's holder (it keeps the workspace's and both turns' volumes mounted,
    agent_holder.py) killed during turn 1: the files it held are gone, and the attempt ends as
    the infrastructure's failure instead of handing the agent an empty workspace or a turn
    without output."""
    cfg, backend = runtime
    t, killed = kill_during_turn(client, cfg.campaign, "netns", "-netns")
    result = _run(cfg, backend, tmp_path, "neg:nap", turns=2)
    t.join(5)
    rec = result.record
    assert killed, "the test never saw the keeper while turn 1 ran"
    assert rec["outcome"] == "infra_error", rec
    err = rec["error"]
    assert err["phase"] == "turn" and err["exception"] == "KeeperLost", err
    assert any(p["name"] == killed[0] for p in err["post_mortem"]), err["post_mortem"]
    left = client.containers.list(all=True, filters={"label": f"pb.campaign={cfg.campaign}"})
    assert not left, [c.name for c in left]


def test_two_concurrent_attempts_share_nothing(runtime, tmp_path, client):
    """Two attempts at once on one backend (as a campaign runs them): distinct networks and
    volumes, both graded, nothing left."""
    cfg, backend = runtime
    seen: dict[str, set[str]] = {}
    results: list = []
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            for c in client.containers.list(filters={"label": [f"pb.campaign={cfg.campaign}", "pb.role=erp"]},
                                            ignore_removed=True):
                try:
                    c.reload()
                except docker.errors.NotFound:  # removed between the listing and now: its attempt ended
                    continue
                seen.setdefault(c.labels["pb.attempt"], set()).update(c.attrs["NetworkSettings"]["Networks"])
            time.sleep(0.3)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    threads = [threading.Thread(target=lambda i=i: results.append(_run(cfg, backend, tmp_path / f"a{i}", "neg:nap", turns=1,
                                                                        rep=i)))
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    stop.set()
    w.join(5)
    assert [r.record["outcome"] for r in results] == ["graded", "graded"], [r.record.get("error") for r in results]
    assert len(seen) == 2
    a, b = seen.values()
    assert a and b and not (a & b), seen
