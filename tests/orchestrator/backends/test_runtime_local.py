"""The local backend: ERP and turns as host subprocesses (isolation: none), same lifecycle."""
from __future__ import annotations

import json
import uuid

import pytest
from repo_paths import REPO_ROOT, SUPPORT_DIR
from runtime_support import fake_scenario


@pytest.fixture()
def local(tmp_path):
    from orchestrator.backends.local import LocalBackend
    from orchestrator.config import RuntimeConfig

    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="pytest-local")
    return cfg, LocalBackend(cfg)


def _run(cfg, backend, tmp_path, system, **kw):
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.cells import parse_cell

    scenario, task = fake_scenario(tmp_path / "scenario", turns=kw.pop("turns", 2), budget_s=kw.pop("budget", 60))
    spec = AttemptSpec(parse_cell(f"{system}:fake"), 0, timeout_override_s=kw.pop("timeout", None))
    return run_attempt(spec, backend=backend, config=cfg, scenario=scenario, task=task, grade=False)


def test_local_turn_subprocess(local, tmp_path):
    """One turn directly through the sandbox: the entrypoint runs with cwd = workspace."""
    from orchestrator.backends.base import AttemptContext, TurnLaunch
    from orchestrator.cells import parse_cell
    from orchestrator.identity import AttemptIdentity
    from orchestrator.paths import AttemptPaths

    cfg, backend = local
    _, task = fake_scenario(tmp_path / "scenario")
    paths = AttemptPaths.for_identity(cfg.runs_root, "t", AttemptIdentity.of(parse_cell("oracle:fake"), 0, 0, 1))
    paths.prepare()
    sb = backend.open_attempt(AttemptContext(f"local-{uuid.uuid4().hex[:6]}", cfg.campaign, paths))
    try:
        system = {"kind": "policy", "name": "oracle", "module": str(task.policies_module)}
        files = {
            "prompt.txt": b"do the work",
            "system.json": json.dumps(system).encode(),
            "context.json": json.dumps({"turn": 1, "date": "2026-10-08", "agent_user": "x", "budget_s": 30}).encode(),
        }
        env = {"ERP_URL": "http://127.0.0.1:9", "ERP_TOKEN": "t", "TURN_BUDGET_S": "30"}
        run = sb.run_turn(TurnLaunch(n=1, files=files, env=env,
                                     budget_s=30, host_turn_dir=paths.turn_dir(1), log_path=paths.turn_log(1)))
        assert run.exit_code == 0 and not run.timed_out, paths.turn_log(1).read_text()
        assert (sb.workspace / "note-1.txt").read_text() == "hello"
        assert json.loads((paths.turn_dir(1) / "out" / "turn.json").read_text())["exit_code"] == 0
        dest = tmp_path / "ws-copy"
        (sb.workspace / "link").symlink_to("/etc")
        sb.copy_workspace(dest)
        assert (dest / "note-1.txt").exists() and not (dest / "link").exists()
    finally:
        assert sb.close() == []
    assert not sb.root.exists()


def test_local_attempt_end_to_end(local, tmp_path):
    cfg, backend = local
    result = _run(cfg, backend, tmp_path, "oracle")
    rec = result.record
    assert rec["outcome"] == "graded", rec.get("error")
    assert rec["isolation"] == "none"
    assert json.loads(result.paths.attempt_json.read_text())["isolation"] == "none"
    assert (result.paths.workspace / "note-2.txt").exists()
    assert result.paths.final_db.stat().st_size > 0
    assert not list(cfg.scratch_root.iterdir())  # scratch removed


def test_local_timeout_kills_the_turn(local, tmp_path):
    cfg, backend = local
    result = _run(cfg, backend, tmp_path, "neg:sleep", turns=1, timeout=2)
    rec = result.record
    assert rec["outcome"] == "agent_error" and rec["turns"][0]["timed_out"]
    assert rec["turns"][0]["duration_s"] < 2 + cfg.turn_hard_grace_s + 5


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie is dead, only unreaped
    except FileNotFoundError:
        return False


def test_a_tied_process_dies_with_its_parent(tmp_path):
    """A process started through `tied_argv` in its own session is killed when its parent is SIGKILLed."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import subprocess, sys, time\n"
        "from orchestrator.parent_death import tied_argv\n"
        "p = subprocess.Popen(tied_argv(['sleep', '120']), start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(0.5)  # the wrapper has exec'd sleep by now
    assert _alive(child)
    with open(f"/proc/{child}/cmdline", "rb") as fh:
        assert fh.read().split(b"\0")[0] == b"sleep"  # exec'd in place: same pid, the real command
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the tied process outlived its parent"


def test_a_tied_process_does_not_start_without_its_parent():
    import subprocess

    from orchestrator.parent_death import WRAPPER

    # parent pid 1 is not ours: the wrapper refuses to start the command
    proc = subprocess.run(["python3", "-c", WRAPPER, "1", "9", "true"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 125 and "parent died" in proc.stderr


CHILD_ORCHESTRATOR = """
import sys, time, uuid
from pathlib import Path
sys.path.insert(0, {tests!r})
from runtime_support import fake_scenario
from orchestrator.backends.base import AttemptContext
from orchestrator.backends.local import LocalBackend
from orchestrator.cells import parse_cell
from orchestrator.config import RuntimeConfig
from orchestrator.identity import AttemptIdentity
from orchestrator.paths import AttemptPaths
from orchestrator.services.erp import ERP, ErpLaunch, erp_service

tmp = Path({tmp!r})
cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", scratch_root=tmp / "scratch", campaign="pytest-pdeath")
scenario, _ = fake_scenario(tmp / "scenario")
paths = AttemptPaths.for_identity(cfg.runs_root, "t", AttemptIdentity.of(parse_cell("null:fake"), 0, 1, 1))
paths.prepare()
sb = LocalBackend(cfg).open_attempt(AttemptContext("pdeath-" + uuid.uuid4().hex[:6], cfg.campaign, paths))
sb.start_service(erp_service(ErpLaunch(Path(scenario.db), Path(scenario.world), "t" * 64), cfg))
sb.wait_service_healthy(ERP)
print(sb.processes[ERP].proc.pid, sb.root, flush=True)
time.sleep(300)
"""


def test_a_local_erp_dies_with_a_sigkilled_orchestrator(tmp_path):
    """The local backend's ERP runs in its own session; SIGKILL of the orchestrator still ends it,
    and the scratch folder it leaves is swept as a dead owner's."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from orchestrator.leftovers import sweep_owned

    tests = SUPPORT_DIR
    code = CHILD_ORCHESTRATOR.format(tests=str(tests), tmp=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        assert child.stdout is not None
        pid_text, root = child.stdout.readline().split()
        erp = int(pid_text)
        assert _alive(erp)
        with open(f"/proc/{erp}/cmdline", "rb") as fh:
            assert b"erp_service" in fh.read()
        assert os.getsid(erp) == erp  # its own session: a group kill of the orchestrator misses it
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    deadline = time.monotonic() + 5
    while _alive(erp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(erp), "the ERP outlived the orchestrator"
    assert sweep_owned(tmp_path / "scratch") == [Path(root)]
