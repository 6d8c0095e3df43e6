"""The docker backend's health wait sleeps on the service's ready line, read from the container's
log stream (one long request), instead of probing it (issue 20: the probe loop's CPU ran beside
the ERP's own start); and a turn's volume and keeper are made ahead of the turn.

Real containers on one sandbox of the docker backend, each service a few lines of Python in the
ERP image:

- ready line, then listening: the wait returns after one health probe (counted), and the service
  really answers;
- a ready line printed before it listens: the wait goes on until the service answers (ready is
  not healthy);
- no ready line ever, idle: an infra error (ErpUnhealthy) at its no-progress deadline, with its
  post-mortem;
- a service that writes to its log and dies before its ready line: reported at once with its exit
  code, its log kept on the host and in the post-mortem;
- a turn prepared ahead runs with the volume and keeper made for it (no second one), a failed
  preparation is the turn's ContainerStartError, and a preparation no turn used leaves nothing.

The ready line's assembly from a stream's chunks is checked without a container as well.
"""
from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from runtime_support import TEST_CAMPAIGN

import orchestrator.backends.base as base_module
from orchestrator.backends.base import AttemptContext, TurnLaunch
from orchestrator.backends.docker.containers import LogFollower
from orchestrator.backends.services import HealthCheck, Listener, ServiceSpec
from orchestrator.cells import Cell
from orchestrator.config import Images, RuntimeConfig
from orchestrator.errors import ContainerStartError, ErpUnhealthy, classify_exception
from orchestrator.identity import AttemptIdentity
from orchestrator.paths import AttemptPaths

# argv: {bind:api} [seconds to wait between the ready line and listening]
SERVICE = textwrap.dedent(
    '''
    import http.server, json, sys, time
    host, port = sys.argv[1].rsplit(":", 1)
    delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, fmt, *args):
            pass

    print("starting up", file=sys.stderr, flush=True)
    if delay:
        print(json.dumps({"event": "ready", "api": "http://%s:%s" % (host, port)}), flush=True)
        time.sleep(delay)
    server = http.server.HTTPServer((host, int(port)), Handler)
    if not delay:
        print(json.dumps({"event": "ready", "api": "http://%s:%s" % (host, port)}), flush=True)
    server.serve_forever()
    '''
)


class _Holder:
    """Stands in for a container whose log stream is the given chunks (for the line assembly only)."""

    name = "holder"

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def logs(self, **_kwargs: Any) -> Iterator[bytes]:
        return iter(self.chunks)


def test_the_ready_line_is_found_across_chunks_and_only_as_json(tmp_path: Path):
    follower = LogFollower(_Holder([]), tmp_path / "a.log", watch_ready=True)
    follower._scan(b'{"level": "info", "msg": "ready soon"}\n{"event": "rea')
    assert not follower.ready.is_set()
    follower._scan(b'dy", "api": "http://x:1"}\n')
    assert follower.ready.is_set() and follower.saw_ready_line
    other = LogFollower(_Holder([b"ready\n", b'not json "ready"\n']), tmp_path / "b.log", watch_ready=True)
    other.run()  # the stream ends without a ready line: the event is set, the line was not seen
    assert other.ready.is_set() and not other.saw_ready_line
    assert (tmp_path / "b.log").read_bytes() == b'ready\nnot json "ready"\n'



@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, docker_client, images) -> Iterator[Any]:
    from orchestrator.backends.docker.sandbox import DockerBackend

    tmp = tmp_path_factory.mktemp("ready")
    campaign = f"{TEST_CAMPAIGN}-ready-{uuid.uuid4().hex[:6]}"
    cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", campaign=campaign, admission_root=tmp / "slots",
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    backend = DockerBackend(cfg, client=docker_client)
    backend.ensure_prepared()
    attempt_id = f"ready-{uuid.uuid4().hex[:8]}"
    paths = AttemptPaths.for_identity(cfg.runs_root, attempt_id, AttemptIdentity.of(Cell("null", "fake"), 0, 1, 1))
    paths.prepare()
    sb = backend.open_attempt(AttemptContext(attempt_id, cfg.campaign, paths))
    try:
        yield sb
    finally:
        assert sb.close() == []
        flt = {"label": f"pb.campaign={campaign}"}
        left = [c.name for c in docker_client.containers.list(all=True, filters=flt)]
        left += [n.name for n in docker_client.networks.list(filters=flt)]
        left += [v.name for v in docker_client.volumes.list(filters=flt)]
        assert not left, f"left behind: {left}"


def _spec(name: str, offset: int, command: tuple[str, ...], images: Any, *, timeout_s: float = 60) -> ServiceSpec:
    return ServiceSpec(name=name, command=command, image=images.erp.tag, listeners=(Listener("api", "control", 8090),),
                       ready_line=True, health=HealthCheck("api", "/health", timeout_s=timeout_s),
                       address_offset=offset, stop_timeout_s=2)


@pytest.fixture()
def probes(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """Every health probe the wait makes, by its result."""
    seen: list[str | None] = []
    real = base_module.probe_health

    def counted(*args: Any, **kwargs: Any) -> str | None:
        seen.append(result := real(*args, **kwargs))
        return result

    monkeypatch.setattr(base_module, "probe_health", counted)
    return seen


@pytest.mark.docker
def test_a_ready_service_is_healthy_after_one_probe(sandbox, images, probes):
    endpoints = sandbox.start_service(_spec("quick", 5, ("{python}", "-c", SERVICE, "{bind:api}"), images))
    sandbox.wait_service_healthy("quick", error=ErpUnhealthy)
    assert probes == [None]  # the ready line woke the wait; its one probe passed
    with httpx.Client(trust_env=False, timeout=10) as http:
        assert http.get(endpoints.url("api") + "/health").status_code == 200
    assert '"event": "ready"' in sandbox.ctx.paths.service_log("quick").read_text()


@pytest.mark.docker
def test_a_ready_line_before_listening_still_waits_for_an_answer(sandbox, images, probes):
    sandbox.start_service(_spec("early", 6, ("{python}", "-c", SERVICE, "{bind:api}", "1.5"), images))
    sandbox.wait_service_healthy("early", error=ErpUnhealthy)
    assert probes[-1] is None and len(probes) >= 2 and all(p is not None for p in probes[:-1]), probes
    sandbox.check_service("early", error=ErpUnhealthy)  # answering now, not only "ready"


@pytest.mark.docker
def test_no_ready_line_is_an_infra_error_at_its_no_progress_deadline(sandbox, images, probes):
    idle = ("{python}", "-c", "import time; print('loading', flush=True); time.sleep(120)", "{bind:api}")
    sandbox.start_service(_spec("mute", 7, idle, images, timeout_s=4))
    with pytest.raises(ErpUnhealthy) as info:
        sandbox.wait_service_healthy("mute", error=ErpUnhealthy)
    assert classify_exception(info.value) == "infra_error"
    assert "no progress for" in str(info.value) and "no ready line yet" in str(info.value), info.value
    assert probes == []  # it never said it was ready: nothing was probed
    pm = info.value.post_mortems[0]
    assert pm.status == "running" and "loading" in pm.last_logs, pm


@pytest.mark.docker
def test_a_service_that_dies_before_its_ready_line_is_reported_with_its_log(sandbox, images, probes):
    crash = ("{python}", "-c", "import sys; print('cannot open the database', file=sys.stderr); sys.exit(4)",
             "{bind:api}")
    sandbox.start_service(_spec("dying", 8, crash, images, timeout_s=300))
    with pytest.raises(ErpUnhealthy) as info:
        sandbox.wait_service_healthy("dying", error=ErpUnhealthy)
    assert classify_exception(info.value) == "infra_error"
    assert "exit 4" in str(info.value) and "its output ended" in str(info.value), info.value
    assert probes == []
    pm = info.value.post_mortems[0]
    assert pm.exit_code == 4 and "cannot open the database" in pm.last_logs, pm
    assert "cannot open the database" in sandbox.ctx.paths.service_log("dying").read_text()  # kept on the host


def _turn(sandbox: Any, n: int, image: str) -> TurnLaunch:
    paths = sandbox.ctx.paths
    system = {"kind": "policy", "name": "null"}
    files = {"prompt.txt": b"nothing", "system.json": json.dumps(system).encode(),
             "context.json": json.dumps({"turn": n, "date": "2026-10-08", "agent_user": "x", "budget_s": 30}).encode()}
    env = {"ERP_URL": "http://127.0.0.1:9", "ERP_TOKEN": "t", "TURN_BUDGET_S": "30"}
    return TurnLaunch(n=n, files=files, env=env, budget_s=30, host_turn_dir=paths.turn_dir(n),
                      log_path=paths.turn_log(n), image=image, next_n=n + 1)


def _roles(sandbox: Any) -> set[str]:
    return set(sandbox.containers)


@pytest.mark.docker
def test_turns_run_on_what_was_prepared_for_them(sandbox, images, docker_client):
    sandbox.prepare_turn(1)
    sandbox.turns._prepared[1].wait()  # made ahead: its volume and a running keeper
    keeper = sandbox.containers["turn-1-keeper"]
    run = sandbox.run_turn(_turn(sandbox, 1, images.agent.tag))
    assert run.exit_code == 0 and (sandbox.ctx.paths.turn_dir(1) / "context.json").is_file()
    assert json.loads((sandbox.ctx.paths.turn_dir(1) / "context.json").read_text())["turn"] == 1
    # turn 1's run prepared turn 2 (next_n): made once, used by turn 2
    sandbox.turns._prepared[2].wait()
    keeper2 = sandbox.containers["turn-2-keeper"]
    assert keeper2.id != keeper.id
    run2 = sandbox.run_turn(_turn(sandbox, 2, images.agent.tag))
    assert run2.exit_code == 0
    # one list call (containers.list inspects each: a turn-1 container being removed beside it
    # would be a 404 there)
    listed = docker_client.api.containers(all=True, filters={"label": f"pb.attempt={sandbox.ctx.attempt_id}"})
    made = [n for c in listed for n in c["Names"] if n.endswith("-t2-keeper")]
    assert len(made) <= 1, made  # no second keeper for turn 2 (the first is being removed, or gone)


@pytest.mark.docker
def test_a_failed_preparation_is_the_turns_start_error(sandbox, images):
    sandbox.agent_namespace()  # the agent side runs on the real image
    real = sandbox.backend.agent_image
    sandbox.backend.agent_image = f"pb-missing-{uuid.uuid4().hex[:8]}:0"
    try:
        sandbox.prepare_turn(7)
        sandbox.turns._prepared[7]._thread.join()
    finally:
        sandbox.backend.agent_image = real
    with pytest.raises(ContainerStartError) as info:
        sandbox.run_turn(_turn(sandbox, 7, images.agent.tag))
    assert "turn 7" in str(info.value)
    assert "turn-7-keeper" not in _roles(sandbox)
