"""Campaigns on a real Ray cluster on this machine: a head and two worker nodes, each with its
own Docker-slot resource (one slot each, so two attempts in flight run one per node).

- The campaign of oracle and null attempts on payment-run seed 0 runs across both workers with
  the expected verdicts, and its ledger equals the same campaign run locally (same verdicts,
  checks and canonical hashes); each worker received the scenario from the head (its own
  scenario cache) and the attempt folders came back whole. Local backend (attempts as real
  processes on the nodes); docker backend once, marked `docker`.
- SIGINT to the campaign while attempts run on the nodes: they are cancelled there (Ray's
  cancel; each tears down), the command exits 130, and the same command then finishes the label
  with each attempt once.
- A worker node killed mid-attempt (SIGKILL to its whole process tree): its attempt is an infra
  error retried on the other node, the campaign completes, the ledger has each attempt once,
  and (docker) nothing is left on the engine.

Skipped with the reason when Ray is not installed (`pip install -e '.[ray]'`; `make test`
installs it).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ray_cluster import LocalRayCluster, ray_missing

from orchestrator.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.heavy,  # a 3-node cluster: minutes per test (make test-heavy)
              pytest.mark.skipif(bool(ray_missing()), reason=str(ray_missing()))]

CELLS = "oracle:payment-run,null:payment-run"
ORCHESTRATE = Path(sys.executable).with_name("orchestrate")


@pytest.fixture(scope="module")
def cluster():
    c = LocalRayCluster({"wa": 1, "wb": 1}).start()
    try:
        yield c
    finally:
        c.stop()


def _ledger(runs: Path, label: str) -> list[dict[str, Any]]:
    return [json.loads(t) for t in (runs / label / "attempts.jsonl").read_text().splitlines()]


def _comparable(line: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on where an attempt ran: identity, verdict, checks, canonical state."""
    return {
        "identity": line["identity"], "outcome": line["outcome"], "passed": line["passed"],
        "breach": line["breach"], "checks": line["checks"], "canonical_db": line["hashes"]["canonical_db"],
        "workspace": line["hashes"]["workspace"], "turns": [(t["n"], t["exit_code"]) for t in line["turns"]],
    }


def _nodes(runs: Path, label: str) -> dict[str, str]:
    """attempt folder -> the node it ran on (node.json written by the head)."""
    return {str(p.parent.relative_to(runs / label)): json.loads(p.read_text())["name"]
            for p in sorted((runs / label).glob("*/seed-*/rep-*/node.json"))}


def _campaign(runs: Path, label: str, backend: str, *extra: str) -> list[str]:
    return ["campaign", "--cells", CELLS, "--seeds", "0", "--reps", "1", "--concurrency", "2",
            "--backend", backend, "--label", label, "--runs-root", str(runs), *extra]


def _engine_objects(label: str) -> list[str]:
    import docker

    client = docker.from_env(version="1.41")
    flt = {"label": f"pb.campaign={label}"}
    found = [f"container {c.name}" for c in client.containers.list(all=True, filters=flt)]
    found += [f"network {n.name}" for n in client.networks.list(filters=flt)]
    found += [f"volume {v.name}" for v in client.volumes.list(filters=flt)]
    return found


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_campaign_on_the_cluster_equals_the_local_one(cluster: LocalRayCluster, tmp_path: Path, backend: str,
                                                      request, capsys):
    if backend == "docker":
        request.getfixturevalue("images")
    label = f"ray-eq-{backend}-{os.getpid()}"
    on_ray, here = tmp_path / "ray-runs", tmp_path / "local-runs"
    code = main(_campaign(on_ray, label, backend, "--executor", "ray", "--ray-address", cluster.address))
    err = capsys.readouterr().err
    assert code == 0, err
    lines = _ledger(on_ray, label)
    by_system = {ln["identity"]["system"]: ln for ln in lines}
    assert len(lines) == 2 and set(by_system) == {"oracle", "null"}
    assert by_system["oracle"]["outcome"] == "graded" and by_system["oracle"]["passed"] is True
    assert by_system["null"]["outcome"] == "graded" and by_system["null"]["passed"] is False
    assert all(ln["isolation"] == ("docker" if backend == "docker" else "none") for ln in lines)
    assert all(not ln["retries"] for ln in lines), [ln["retries"] for ln in lines]

    # one slot per node and two attempts in flight: one attempt ran on each worker
    nodes = _nodes(on_ray, label)
    assert sorted(nodes.values()) == ["wa", "wb"], nodes
    assert "on wa" in err and "on wb" in err, err  # the progress says where each attempt runs
    events = [json.loads(t) for t in (on_ray / label / "events.jsonl").read_text().splitlines()]
    assert sorted(e["node"] for e in events if e.get("event") == "attempt_placed") == ["wa", "wb"]
    # the attempt folder came back whole: the attempt's own records and its workspace
    for line in lines:
        folder = on_ray / label / f"{line['identity']['system']}__payment-run" / "seed-0" / "rep-1"
        assert {"result.json", "attempt.json", "final.db"} <= {p.name for p in folder.iterdir()}, list(folder.iterdir())
        assert (folder / "workspace").is_dir() and line["hashes"]["final_db"]
    # each worker received the scenario from the head into its own cache, and checked it
    for name in ("wa", "wb"):
        received = list((cluster.root / name / "scenarios" / "payment-run").glob("*-seed-0"))
        assert len(received) == 1 and (received[0] / "scenario.db").is_file(), received
    if backend == "docker":
        assert _engine_objects(label) == []

    # the same campaign, run here: the same ledger but for where and when
    assert main(_campaign(here, label, backend)) == 0, capsys.readouterr().err
    local = _ledger(here, label)
    assert [_comparable(ln) for ln in lines] == [_comparable(ln) for ln in local]
    assert all(ln["hashes"]["canonical_db"] for ln in lines)


def _owned_by(label: str, pids: set[int]) -> list[str]:
    """Containers of the campaign whose owner process (`pb.owner.pid`) is one of `pids`."""
    import docker

    client = docker.from_env(version="1.41")
    found = client.api.containers(all=True, filters={"label": f"pb.campaign={label}"})
    return [c["Id"] for c in found if int((c.get("Labels") or {}).get("pb.owner.pid", "0")) in pids]


def _events(runs: Path, label: str) -> list[dict[str, Any]]:
    path = runs / label / "events.jsonl"
    if not path.exists():
        return []
    out = []
    for text in path.read_text().splitlines():
        try:
            out.append(json.loads(text))
        except ValueError:  # a line being written
            pass
    return out


def test_a_stopped_campaign_cancels_its_attempts_on_the_nodes_and_resumes(cluster: LocalRayCluster, tmp_path: Path):
    runs = tmp_path / "runs"
    label = f"ray-stop-{os.getpid()}"
    argv = [str(ORCHESTRATE), *_campaign(runs, label, "local", "--executor", "ray", "--ray-address", cluster.address)]
    argv[argv.index("--reps") + 1] = "2"
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    log = tmp_path / "campaign.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 600
        while len([e for e in _events(runs, label) if e.get("event") == "attempt_placed"]) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-4000:]
            time.sleep(0.5)
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text(errors="replace")
    assert code == 130, text[-4000:]
    cut = [json.loads(p.read_text()) for p in sorted((runs / label).glob("*/seed-*/rep-*/result.json"))]
    assert cut and any(r["outcome"] == "infra_error" and "cancel" in json.dumps(r["error"]) for r in cut), \
        [(r["outcome"], r["error"]) for r in cut]
    assert "INTERRUPTED" in text, text[-3000:]

    assert main(_campaign(runs, label, "local", "--executor", "ray", "--ray-address", cluster.address,
                          "--reps", "2")) == 0
    lines = _ledger(runs, label)
    assert len(lines) == 4 and len({ln["attempt_id"] for ln in lines}) == 4
    assert sorted((ln["identity"]["system"], ln["passed"]) for ln in lines) == [("null", False)] * 2 + [("oracle", True)] * 2
    assert sum(len(ln["retries"]) for ln in lines) >= 1  # the cancelled tries, kept aside


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_node_lost_mid_attempt_is_retried_on_the_other(tmp_path: Path, backend: str, request):
    if backend == "docker":
        request.getfixturevalue("images")
    # A cluster of its own: one of its nodes dies here.
    cluster = LocalRayCluster({"wa": 1, "wb": 1}).start()
    try:
        _node_loss(cluster, tmp_path, backend)
    finally:
        cluster.stop()


def _node_loss(cluster: LocalRayCluster, tmp_path: Path, backend: str) -> None:
    runs = tmp_path / "runs"
    label = f"ray-loss-{backend}-{os.getpid()}"
    argv = [str(ORCHESTRATE), *_campaign(runs, label, backend, "--executor", "ray", "--ray-address", cluster.address)]
    argv[argv.index("--reps") + 1] = "2"  # four attempts: two in flight, one per node
    env = dict(os.environ, TESTCONTAINERS_RYUK_DISABLED="true")
    env.pop("RAY_ADDRESS", None)
    log = tmp_path / "campaign.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env)
    try:
        victim = _wait_for_attempt_on(cluster, runs, label, "wb", backend, proc, log)
        killed = cluster.kill("wb")  # paused mid-attempt: the victim is lost for certain
        assert killed
        code = proc.wait(timeout=1500)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text(errors="replace")
    assert code == 0, text[-4000:]
    assert cluster.leftovers(killed) == []  # the node is gone, all of it

    lines = _ledger(runs, label)
    ids = [ln["attempt_id"] for ln in lines]
    assert len(lines) == 4 and len(set(ids)) == 4, ids  # each attempt once
    verdicts = sorted((ln["identity"]["system"], ln["outcome"], ln["passed"]) for ln in lines)
    assert verdicts == [("null", "graded", False)] * 2 + [("oracle", "graded", True)] * 2, verdicts
    lost = [ln for ln in lines if ln["attempt_id"] == victim]
    assert len(lost) == 1 and [r["outcome"] for r in lost[0]["retries"]] == ["infra_error"], lost
    assert "lost" in json.dumps(lost[0]["retries"][0]["errors"]), lost[0]["retries"]
    assert all(not ln["retries"] for ln in lines if ln["attempt_id"] != victim)
    # the retry ran on the node still alive; after the loss nothing more ran on wb
    nodes = _nodes(runs, label)
    assert nodes and set(nodes.values()) <= {"wa", "wb"}, nodes
    retried = [e for e in _events(runs, label) if e.get("event") == "attempt_placed" and e.get("attempt_id") == victim]
    assert [e["node"] for e in retried] == ["wb", "wa"], retried
    assert f"retry  {victim}" in text and "lost mid-attempt" in text, text[-3000:]
    # the lost try's work folder on the host went with the next try there (its owner is dead)
    from orchestrator.campaign.ray_node import work_root

    assert not [p for p in work_root().glob(f"{victim}-*")], list(work_root().iterdir())
    if backend == "docker":
        assert _engine_objects(label) == []


def _wait_for_attempt_on(cluster: LocalRayCluster, runs: Path, label: str, node: str, backend: str,
                         proc: subprocess.Popen[bytes], log: Path) -> str:
    """The attempt id placed on `node`, returned with the node paused (SIGSTOP) mid-attempt, so
    that the caller's kill loses that attempt for certain: once it has started there (its try's
    work folder exists; docker: the node's worker has created engine objects for it), the node
    is paused and the try's folder holds no result.json, and a paused node writes nothing. An
    attempt that finished before the pause is passed over (the node resumes) for the next one."""
    from orchestrator.campaign.ray_node import work_root

    passed_over: set[str] = set()
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(errors="replace")[-4000:]
        events = _events(runs, label)
        placed = [e["attempt_id"] for e in events if e.get("event") == "attempt_placed" and e.get("node") == node]
        ended = {e["attempt_id"] for e in events if e.get("event") in ("attempt_finished", "attempt_retry")}
        for victim in [v for v in placed if v not in passed_over | ended]:
            started = list(work_root().glob(f"{victim}-*"))
            if not started:
                break  # placed, not yet begun on the node: look again
            if backend == "docker":
                cluster.nodes[node].remember()
                if not _owned_by(label, set(cluster.nodes[node].pids)):
                    break
            cluster.pause(node)
            if not any(next(w.rglob("result.json"), None) for w in started):
                return victim  # paused before its result: it cannot finish any more
            cluster.resume(node)
            passed_over.add(victim)
        time.sleep(0.2)
    raise AssertionError("no attempt was placed on " + node + ":\n" + log.read_text(errors="replace")[-4000:])
