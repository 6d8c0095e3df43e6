"""Labels and reap on the real engine: objects of a dead owner are removed, a live owner's kept;
objects that vanish while a reap lists them are no error; two orchestrators at once finish."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest
from repo_paths import REPO_ROOT, SUPPORT_DIR
from runtime_support import TEST_CAMPAIGN, docker_client, resolve_images

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def client():
    return docker_client()


def _dead_owner():
    from orchestrator import labels as L

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = L.process_start_time(proc.pid) or "1"
    proc.wait()
    me = L.Owner.current()
    return L.Owner(proc.pid, start, me.boot, me.host)


def test_reap_removes_dead_owners_objects_only(client, request):
    from orchestrator import labels as L
    from orchestrator.backends.docker.reaper import reap

    image = resolve_images(request).agent.tag
    campaign = f"{TEST_CAMPAIGN}-reap-{uuid.uuid4().hex[:6]}"
    dead, live = _dead_owner(), L.Owner.current()
    made = []
    try:
        for who, owner in (("dead", dead), ("live", live)):
            labels = L.attempt_labels(campaign, f"reap-{who}", "helper", owner)
            made.append(client.networks.create(f"pb-reap-{who}-{uuid.uuid4().hex[:4]}", internal=True, labels=labels,
                                               ipam=None))
            made.append(client.volumes.create(f"pb-reap-{who}-{uuid.uuid4().hex[:4]}", labels=labels))
            made.append(client.containers.create(image, command=["true"], name=f"pb-reap-{who}-{uuid.uuid4().hex[:4]}",
                                                 labels=labels, network_mode="none"))
        foreign = L.attempt_labels(campaign, "reap-foreign", "helper", L.Owner(1, "1", dead.boot, "another-host"))
        made.append(client.volumes.create(f"pb-reap-foreign-{uuid.uuid4().hex[:4]}", labels=foreign))

        dry = reap(client, campaign=campaign, dry_run=True)
        assert len(dry.removed) == 3
        report = reap(client, campaign=campaign)
        assert len(report.removed) == 3 and not report.failed, report
        assert all("reap-dead" in r or "pb-reap-dead" in r for r in report.removed), report.removed
        left = {v.name for v in client.volumes.list(filters={"label": f"pb.campaign={campaign}"})}
        assert any("live" in n for n in left) and any("foreign" in n for n in left)
        assert [c.name for c in client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"})] == [
            m.name for m in made if hasattr(m, "start") and "live" in m.name
        ]
        # --all-dead: the foreign owner (cannot be checked) goes too; the live one stays.
        report = reap(client, campaign=campaign, all_dead=True)
        assert [r for r in report.removed if "foreign" in r] and not [r for r in report.removed if "live" in r]
    finally:
        for m in made:
            try:
                m.remove(force=True) if not hasattr(m, "connect") else m.remove()
            except Exception:  # noqa: BLE001
                pass
    assert not client.volumes.list(filters={"label": f"pb.campaign={campaign}"})
    assert not client.networks.list(filters={"label": f"pb.campaign={campaign}"})
    assert not client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"})


def test_reap_command_runs(client):
    out = subprocess.run([sys.executable, "-m", "orchestrator.cli", "reap", "--dry-run", "--campaign", "nothing-here"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "removed 0" in out.stdout


def _churn(client, image: str, labels: dict[str, str], stop: threading.Event, errors: list[str]) -> None:
    """Create and remove labelled containers as fast as the engine allows (another
    orchestrator tearing its attempts down)."""
    while not stop.is_set():
        try:
            made = [client.containers.create(image, command=["true"], labels=labels, network_mode="none",
                                             name=f"pb-reap-churn-{uuid.uuid4().hex[:8]}") for _ in range(4)]
            for c in made:
                c.remove(force=True)
        except Exception as exc:  # noqa: BLE001 — reported by the test
            errors.append(repr(exc))
            return


def test_reap_tolerates_objects_that_vanish_while_it_lists_them(client, request):
    """Containers of a live owner appear and vanish while reap runs again and again: no reap
    raises, none reports a failure, none removes a live owner's object. (The SDK's listing,
    which fetches each container again, raised NotFound in this race several times in 40.)"""
    from orchestrator import labels as L
    from orchestrator.backends.docker.reaper import reap

    image = resolve_images(request).agent.tag
    campaign = f"{TEST_CAMPAIGN}-reaprace-{uuid.uuid4().hex[:6]}"
    labels = L.attempt_labels(campaign, "reap-race", "helper", L.Owner.current())
    stop, errors = threading.Event(), list[str]()
    churner = threading.Thread(target=_churn, args=(client, image, labels, stop, errors))
    churner.start()
    try:
        reports = [reap(client, campaign=campaign) for _ in range(60)]
    finally:
        stop.set()
        churner.join(60)
        for c in client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"}):
            c.remove(force=True)
    assert not errors, errors
    assert all(not r.failed and not r.removed for r in reports), [r.summary() for r in reports if r.failed or r.removed]
    assert sum(len(r.kept) for r in reports) > 0   # the reaps did see the churning containers


ORCHESTRATOR = textwrap.dedent('''
    """One orchestrator: waits for the common start, then runs short attempts, each on a fresh
    backend (so each starts with a reap of the shared engine), and prints each outcome."""
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from runtime_support import fake_scenario
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.cells import parse_cell
    from orchestrator.config import Images, RuntimeConfig

    tmp, campaign, erp, agent = Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    go, n = Path(sys.argv[6]), int(sys.argv[7])
    cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", campaign=campaign, images=Images(erp=erp, agent=agent))
    scenario, task = fake_scenario(tmp / "scenario", turns=1, budget_s=60)
    while not go.exists():
        time.sleep(0.01)
    for rep in range(1, n + 1):
        result = run_attempt(AttemptSpec(parse_cell("null:fake"), 0, rep=rep), backend=DockerBackend(cfg),
                             config=cfg, scenario=scenario, task=task, grade=False)
        print(json.dumps({"rep": rep, "outcome": result.record["outcome"], "error": result.record.get("error")}), flush=True)
''')


def test_two_orchestrators_at_once_finish_without_setup_errors(client, request, tmp_path):
    """Two orchestrator processes start at the same moment on one engine; each runs short
    attempts, and each attempt starts with a reap while the other's attempts end: every
    attempt is graded, none fails its setup."""
    images = resolve_images(request)
    campaign = f"{TEST_CAMPAIGN}-reaptwo-{uuid.uuid4().hex[:6]}"
    go = tmp_path / "go"
    script = tmp_path / "orchestrator_run.py"
    script.write_text(ORCHESTRATOR)
    tests_dir = str(SUPPORT_DIR)
    procs = [subprocess.Popen([sys.executable, str(script), tests_dir, str(tmp_path / f"o{i}"), campaign,
                               images.erp.tag, images.agent.tag, str(go), "3"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
             for i in range(2)]
    time.sleep(3)   # both imported and waiting
    go.touch()
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=600)
            outs.append((p.returncode, out, err[-3000:]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        left = client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"})
        left += client.networks.list(filters={"label": f"pb.campaign={campaign}"})
        left += client.volumes.list(filters={"label": f"pb.campaign={campaign}"})
    for code, out, err in outs:
        assert code == 0, err
        lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
        assert [x["outcome"] for x in lines] == ["graded"] * 3, lines
    assert not left, [o.name for o in left]
