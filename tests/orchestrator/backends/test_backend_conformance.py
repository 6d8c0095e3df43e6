"""The sandbox contract, run on every backend (in the spirit of inspect_ai's sandbox self-check).

Each backend must: open a sandbox of its isolation; start a *declared* service with its private
files, environment and listeners, stream its output to logs/<name>.log, report it running and
healthy, post-mortem it, stop it; fail loudly for a service that dies; refuse a service name
twice; seed and copy the workspace (symlinks never followed); run a turn in the workspace with
the budget enforced; and leave nothing behind on close (idempotent). The service here is a small
HTTP server written for the test, not the ERP: the contract is about any named service.
"""
from __future__ import annotations

import json
import os
import secrets
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from runtime_support import TEST_CAMPAIGN, fake_scenario

from orchestrator.backends.base import AttemptContext, Backend, Mount, Sandbox, TurnLaunch
from orchestrator.backends.services import HealthCheck, Listener, ServiceFile, ServiceSpec, ServiceSpecError
from orchestrator.cells import Cell
from orchestrator.config import Images, RuntimeConfig
from orchestrator.errors import ServiceUnhealthy
from orchestrator.identity import AttemptIdentity
from orchestrator.paths import AttemptPaths

SERVICE = textwrap.dedent(
    '''
    import http.server, json, os, sys
    data, bind = sys.argv[1], sys.argv[2]
    host, port = bind.rsplit(":", 1)
    token = open(os.path.join(data, "token")).read()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.headers.get("Authorization") != "Bearer " + token:
                self.send_response(401); self.end_headers(); return
            body = {"/health": {"ok": True}, "/env": dict(os.environ), "/files": sorted(os.listdir(data))}.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, fmt, *args):
            sys.stderr.write("request " + (fmt % args) + "\\n")

    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    print(json.dumps({"event": "ready", "api": "http://%s:%d" % (host, server.server_address[1])}), flush=True)
    server.serve_forever()
    '''
)


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Backend, RuntimeConfig, Any]]:
    """(backend, config, images or None) for each backend; checks the engine is clean after."""
    tmp = tmp_path_factory.mktemp(request.param)
    campaign = f"{TEST_CAMPAIGN}-conf-{uuid.uuid4().hex[:6]}"
    if request.param == "local":
        from orchestrator.backends.local import LocalBackend

        cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", scratch_root=tmp / "scratch", campaign=campaign)
        yield LocalBackend(cfg), cfg, None
        return
    from orchestrator.backends.docker.sandbox import DockerBackend

    client = request.getfixturevalue("docker_client")
    images = request.getfixturevalue("images")
    cfg = RuntimeConfig.from_env(
        runs_root=tmp / "runs", campaign=campaign, images=Images(erp=images.erp.tag, agent=images.agent.tag)
    )
    yield DockerBackend(cfg, client=client), cfg, images
    flt = {"label": f"pb.campaign={campaign}"}
    left = [c.name for c in client.containers.list(all=True, filters=flt)]
    left += [n.name for n in client.networks.list(filters=flt)] + [v.name for v in client.volumes.list(filters=flt)]
    assert not left, f"left behind: {left}"


@pytest.fixture()
def sandbox(backend: tuple[Backend, RuntimeConfig, Any], tmp_path: Path) -> Iterator[Sandbox]:
    be, cfg, _ = backend
    be.ensure_prepared()
    attempt_id = f"conf-{uuid.uuid4().hex[:8]}"
    paths = AttemptPaths.for_identity(cfg.runs_root, attempt_id, AttemptIdentity.of(Cell("null", "fake"), 0, 1, 1))
    paths.prepare()
    sb = be.open_attempt(AttemptContext(attempt_id, cfg.campaign, paths))
    try:
        yield sb
    finally:
        assert sb.close() == []
        assert sb.close() == []  # idempotent


def _service(name: str, token: str, *, image: str | None, command: tuple[str, ...] | None = None) -> ServiceSpec:
    return ServiceSpec(
        name=name,
        command=command or ("{python}", "-c", SERVICE, "{data}", "{bind:api}"),
        image=image,
        listeners=(Listener("api", "control", 8090),),
        files=(ServiceFile("token", token.encode(), 0o400),),
        env={"GREETING": "hello"},
        ready_line=True,
        ready_timeout_s=60,
        health=HealthCheck("api", "/health", bearer_token=token, timeout_s=60),
        address_offset=5,
        stop_timeout_s=5,
    )


def _image(backend: tuple[Backend, RuntimeConfig, Any]) -> str | None:
    images = backend[2]
    return images.erp.tag if images is not None else None


def _get(url: str, token: str) -> httpx.Response:
    with httpx.Client(timeout=10, trust_env=False) as http:
        return http.get(url, headers={"Authorization": f"Bearer {token}"})


def test_sandbox_isolation_matches_backend(backend, sandbox):
    assert sandbox.isolation == backend[0].isolation
    assert sandbox.services() == []


def test_declared_service_lifecycle(backend, sandbox):
    token = secrets.token_hex(16)
    spec = _service("echo", token, image=_image(backend))
    endpoints = sandbox.start_service(spec)
    assert set(endpoints.urls) == {"api"} and sandbox.endpoints("echo") == endpoints
    sandbox.wait_service_healthy("echo")
    sandbox.check_service("echo")
    assert sandbox.service_running("echo") and sandbox.services() == ["echo"]
    # The declared files are in {data}; the environment has the declared variable, not the secret.
    assert _get(endpoints.url("api") + "/files", token).json() == ["token"]
    env = _get(endpoints.url("api") + "/env", token).json()
    assert env["GREETING"] == "hello" and token not in json.dumps(env)
    assert _get(endpoints.url("api") + "/health", "wrong").status_code == 401
    pm = sandbox.service_post_mortem("echo")
    assert pm is not None and pm.status == "running" and pm.exit_code in (None, 0)
    sandbox.stop_service("echo")
    assert not sandbox.service_running("echo")
    with pytest.raises(ServiceUnhealthy) as info:
        sandbox.check_service("echo")
    assert info.value.post_mortems and info.value.post_mortems[0].status == "exited"
    log = sandbox.ctx.paths.service_log("echo").read_text()
    assert '"event": "ready"' in log
    sandbox.stop_service("echo")  # stopping a stopped service is a no-op


def test_a_service_name_is_used_once(backend, sandbox):
    token = secrets.token_hex(16)
    sandbox.start_service(_service("once", token, image=_image(backend)))
    with pytest.raises(ServiceSpecError):
        sandbox.start_service(_service("once", token, image=_image(backend)))


def test_a_dying_service_is_reported_with_its_post_mortem(backend, sandbox):
    crash = ("{python}", "-c", "import sys; print('boom on stderr', file=sys.stderr); sys.exit(3)", "{bind:api}")
    spec = _service("crashy", "t", image=_image(backend), command=crash)
    with pytest.raises(ServiceUnhealthy) as info:
        sandbox.start_service(spec)  # local: no ready line
        sandbox.wait_service_healthy("crashy")  # docker: exits before it is healthy
    pms = info.value.post_mortems
    assert pms and pms[0].exit_code == 3 and "boom on stderr" in pms[0].last_logs, pms
    assert not sandbox.service_running("crashy")


def test_undeclared_placeholders_are_refused_before_anything_runs():
    with pytest.raises(ServiceSpecError):
        ServiceSpec(name="bad", command=("{python}", "{bind:nope}"), listeners=(Listener("api", "control", 1),))
    with pytest.raises(ServiceSpecError):
        ServiceSpec(name="bad", command=("x",), files=(ServiceFile("../escape", b""),))
    with pytest.raises(ServiceSpecError):
        ServiceSpec(name="Bad", command=("x",))


def test_a_missing_handbook_folder_is_never_seeded_as_an_empty_one(backend, sandbox, tmp_path):
    # The runtime's failure (the scenario's folder gone from the host), not the agent's: on docker
    # the workspace once got an empty handbook folder and the policy's turn failed on it.
    with pytest.raises(FileNotFoundError):
        sandbox.seed_workspace(tmp_path / "scenario-gone" / "handbook")


def test_workspace_round_trip_and_turns(backend, sandbox, tmp_path):
    _, cfg, _ = backend
    scenario, task = fake_scenario(tmp_path / "scenario")
    sandbox.seed_workspace(Path(scenario.handbook_dir))
    mount = Mount(Path(task.policies_module), "/opt/policy/policies.py")
    paths = sandbox.ctx.paths

    def turn(n: int, policy: str, budget: float) -> Any:
        system = {"kind": "policy", "name": policy, "module": sandbox.policy_path(mount)}
        files = {
            "prompt.txt": b"do the work",
            "system.json": json.dumps(system).encode(),
            "context.json": json.dumps({"turn": n, "date": "2026-10-08", "agent_user": "x", "budget_s": budget}).encode(),
        }
        env = {"ERP_URL": "http://127.0.0.1:9", "ERP_TOKEN": "t", "TURN_BUDGET_S": f"{budget:g}"}
        return sandbox.run_turn(TurnLaunch(n=n, files=files, env=env, budget_s=budget, host_turn_dir=paths.turn_dir(n),
                                           log_path=paths.turn_log(n), mounts=(mount,)))

    run = turn(1, "oracle", 60)  # the fake task's oracle writes note-<turn>.txt into the workspace
    assert run.exit_code == 0 and not run.timed_out, paths.turn_log(1).read_text()
    assert json.loads((paths.turn_dir(1) / "out" / "turn.json").read_text())["exit_code"] == 0
    late = turn(2, "neg:sleep", 1)
    assert late.exit_code == 124 or late.timed_out, late
    assert late.duration_s < 1 + cfg.turn_hard_grace_s + 15
    dest = tmp_path / "copy"
    if sandbox.isolation == "none":  # on docker only the agent can write there (tests/test_escape_attempt.py)
        os.symlink("/etc", Path(sandbox.workspace) / "link")
    sandbox.copy_workspace(dest)
    assert (dest / "note-1.txt").read_text() == "hello"
    assert (dest / "handbook" / "policy.md").read_text().startswith("# Payment policy")
    assert not (dest / "link").exists()
