"""The agent side's one idle container (orchestrator/backends/docker/agent_holder.py): it holds the
attempt's network namespace with its default route deleted, keeps the workspace's and the declared
turns' quota volumes mounted, and keeps no privilege once ready.

Real containers on one docker sandbox whose two turns are declared at open:

- the agent side is the holder alone: no workspace keeper, no route-fix container, no turn keeper
  is ever made; the turns' files go in and come out through the volumes it holds, each turn's
  folder its own (turn 2 sees nothing turn 1's folder held);
- every process of the holder runs as the agent's uid with no capability in any set (read from
  the host's /proc), and its namespace has no default route;
- a holder that leaves a default route, or exits before its ready line, is an infra error at open.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_support import TEST_CAMPAIGN

import orchestrator.backends.docker.agent_holder as holder_module
from orchestrator.backends.base import AttemptContext, TurnLaunch
from orchestrator.cells import Cell
from orchestrator.config import Images, RuntimeConfig
from orchestrator.errors import ContainerStartError, InfraError, classify_exception
from orchestrator.identity import AttemptIdentity
from orchestrator.paths import AttemptPaths

pytestmark = pytest.mark.docker


def _open(tmp: Path, docker_client: Any, images: Any, turns: tuple[int, ...]) -> tuple[Any, str]:
    from orchestrator.backends.docker.sandbox import DockerBackend

    campaign = f"{TEST_CAMPAIGN}-holder-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", campaign=campaign, admission_root=tmp / "slots",
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    backend = DockerBackend(cfg, client=docker_client)
    backend.ensure_prepared()
    attempt_id = f"holder-{uuid.uuid4().hex[:8]}"
    paths = AttemptPaths.for_identity(cfg.runs_root, attempt_id, AttemptIdentity.of(Cell("null", "fake"), 0, 1, 1))
    paths.prepare()
    return backend.open_attempt(AttemptContext(attempt_id, cfg.campaign, paths, turns=turns)), campaign


def _left(docker_client: Any, campaign: str) -> list[str]:
    flt = {"label": f"pb.campaign={campaign}"}
    left = [c.name for c in docker_client.containers.list(all=True, filters=flt)]
    left += [n.name for n in docker_client.networks.list(filters=flt)]
    return left + [v.name for v in docker_client.volumes.list(filters=flt)]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, docker_client, images) -> Iterator[Any]:
    sb, campaign = _open(tmp_path_factory.mktemp("holder"), docker_client, images, (1, 2))
    try:
        yield sb
    finally:
        assert sb.close() == []
        assert not _left(docker_client, campaign), "left behind"


def _turn(sandbox: Any, n: int, image: str, extra: dict[str, bytes]) -> TurnLaunch:
    paths = sandbox.ctx.paths
    files = {"prompt.txt": b"nothing", "system.json": json.dumps({"kind": "policy", "name": "null"}).encode(),
             "context.json": json.dumps({"turn": n, "date": "2026-10-08", "agent_user": "x", "budget_s": 30}).encode(),
             **extra}
    env = {"ERP_URL": "http://127.0.0.1:9", "ERP_TOKEN": "t", "TURN_BUDGET_S": "30"}
    return TurnLaunch(n=n, files=files, env=env, budget_s=30, host_turn_dir=paths.turn_dir(n),
                      log_path=paths.turn_log(n), image=image, next_n=n + 1 if n < 2 else None)


def _roles_made(docker_client: Any, attempt_id: str) -> set[str]:
    listed = docker_client.api.containers(all=True, filters={"label": f"pb.attempt={attempt_id}"})
    return {c["Labels"]["pb.role"] for c in listed}


def test_declared_turns_run_on_the_holders_volumes_and_nothing_else_is_made(sandbox, images, docker_client):
    seen: set[str] = set()
    for n in (1, 2):
        seen |= _roles_made(docker_client, sandbox.ctx.attempt_id)
        extra = {"only-turn-1.txt": b"turn one's"} if n == 1 else {}
        run = sandbox.run_turn(_turn(sandbox, n, images.agent.tag, extra))
        seen |= _roles_made(docker_client, sandbox.ctx.attempt_id)
        assert run.exit_code == 0, run
        out = sandbox.ctx.paths.turn_dir(n)
        assert json.loads((out / "context.json").read_text())["turn"] == n
        assert (out / "out").is_dir()
        assert (out / "only-turn-1.txt").is_file() == (n == 1)  # each turn's folder is its own
    assert seen <= {"netns", "agent"}, seen  # no keeper, no route fix, no workspace keeper
    assert "netns" in seen and "agent" in seen, seen
    assert sandbox.turns._prepared == {}  # nothing made ahead: the holder had both volumes


def _status_fields(pid: int) -> dict[str, str]:
    text = Path(f"/proc/{pid}/status").read_text()
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def test_the_holder_keeps_no_privilege_and_no_default_route(sandbox, images, docker_client):
    holder = sandbox.agent_namespace()
    holder.reload()
    assert holder.status == "running"
    assert holder.attrs["HostConfig"]["Init"] in (False, None)  # no docker-init left as root
    pids = [int(row[1]) for row in holder.top()["Processes"]]
    assert pids, "the holder runs no process"
    uid = sandbox.config.agent_user.split(":")[0]
    for pid in pids:
        st = _status_fields(pid)
        assert st["Uid"].split()[0] == uid and st["Uid"].split()[1] == uid, st["Uid"]
        for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(st[key].strip(), 16) == 0, (pid, key, st[key])
        assert st["NoNewPrivs"].strip() == "1", st["NoNewPrivs"]
    # Positive control of the reader: a process of the host's own (this test) does show its uid 0
    # and a non-empty bounding set.
    me = _status_fields(__import__("os").getpid())
    assert me["Uid"].split()[0] == "0" and int(me["CapBnd"].strip(), 16) != 0
    # The namespace the agent joins: no default route (read by an unprivileged exec).
    for family in ("-4", "-6"):
        code, out = holder.exec_run(["ip", family, "route", "show", "default"], user=sandbox.config.agent_user)
        assert code == 0 and out.strip() == b"", (family, out)
    code, out = holder.exec_run(["ip", "-4", "route", "show"], user=sandbox.config.agent_user)
    assert code == 0 and b"dev eth0" in out, out  # the reader does see the attempt subnet's route


@pytest.mark.parametrize("script,expect", [
    ("echo 'default via 10.99.0.1 dev eth0'; echo {ready}; exec sleep 60", "default via"),
    ("echo 'no setpriv here' >&2; exit 3", "ready line seen: False"),
])
def test_a_holder_that_keeps_a_route_or_never_gets_ready_is_infra_error(tmp_path, docker_client, images,
                                                                        monkeypatch, script, expect):
    monkeypatch.setattr(holder_module, "HOLDER_SCRIPT", script)
    sb, campaign = _open(tmp_path, docker_client, images, (1,))
    try:
        with pytest.raises((InfraError, ContainerStartError)) as info:
            sb.agent_namespace()
        assert classify_exception(info.value) == "infra_error"
        assert expect in str(info.value), info.value
    finally:
        sb.close()
    assert not _left(docker_client, campaign), "left behind"
