"""The local backend: the ERP and each turn as host subprocesses (isolation: none).

For fast development runs and for building references. Nothing here isolates anything: the
agent process runs as the orchestrator's user and could read every file on the host; every
record written by an attempt on this backend says `isolation: none`.

    <scratch_root>/<attempt id>/
      <service>/  the service's private files ({data}: for the ERP scenario.db, world.json, control.token)
      workspace/  handbook/ + the agent's files
      home-<n>/   a fresh HOME for turn n, removed after the turn
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from orchestrator.admission import start_slots
from orchestrator.backends.base import AttemptContext, Backend, Mount, Sandbox, TurnLaunch, TurnRun
from orchestrator.backends.services import ServiceEndpoints, ServiceSpec
from orchestrator.cancel_watch import CancelWatch
from orchestrator.config import RuntimeConfig
from orchestrator.errors import ContainerStartError, InfraError, Phase, PostMortem, ServiceUnhealthy
from orchestrator.leftovers import claim
from orchestrator.parent_death import tied_argv

# A cancelled turn gets this long between SIGTERM and SIGKILL (a budget's end gets kill_grace_s).
CANCEL_GRACE_S = 2.0


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, n: int = 60) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
    except OSError:
        return ""


class LocalBackend(Backend):
    """ERP and agent turns as host processes."""

    name = "local"
    isolation = "none"

    def __init__(self, config: RuntimeConfig, python: str | None = None):
        self.config = config
        self.python = python or sys.executable

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "isolation": self.isolation, "python": self.python}

    def open_attempt(self, ctx: AttemptContext) -> LocalSandbox:
        root = self.config.scratch_root / ctx.attempt_id
        try:
            (root / "workspace").mkdir(parents=True)
        except OSError as exc:
            shutil.rmtree(root, ignore_errors=True)
            raise InfraError(f"scratch folder {root}: {exc}", phase=Phase.OPEN) from exc
        claim(root)  # a killed orchestrator's scratch folder is swept later (orchestrator/leftovers.py)
        return LocalSandbox(self, ctx, root)


class _Process:
    """One running service: its process, log file and stdout reader."""

    def __init__(self, proc: subprocess.Popen[bytes], log: IO[bytes], reader: threading.Thread, log_path: Path):
        self.proc, self.log, self.reader, self.log_path = proc, log, reader, log_path


class LocalSandbox(Sandbox):
    """Temp folders and processes of one local attempt."""

    isolation = "none"

    def __init__(self, backend: LocalBackend, ctx: AttemptContext, root: Path):
        super().__init__()
        self.backend, self.config, self.ctx, self.root = backend, backend.config, ctx, root
        self.processes: dict[str, _Process] = {}
        self.workspace = root / "workspace"
        self.admission = start_slots(self.config)  # host-wide: service starts queue here

    def _env_base(self) -> dict[str, str]:
        """A clean environment: the host's secrets stay out; the venv's bin is on PATH for `erp`."""
        bin_dir = str(Path(self.backend.python).parent)
        return {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    # -- services ------------------------------------------------------------------------------

    def _start_service(self, spec: ServiceSpec) -> ServiceEndpoints:
        data = self.root / spec.name
        data.mkdir(mode=0o700)
        for f in spec.files:
            target = data / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.data)
            target.chmod(f.mode)
        # Networks mean nothing here (isolation: none): every listener binds loopback. Without a
        # ready line the port is picked here (a small race with other processes, acceptable for
        # a development backend); with one, the service binds port 0 and reports what it got.
        binds = {li.name: f"127.0.0.1:{li.publish_port}" if li.publish_port else "127.0.0.1:0" if spec.ready_line
                 else f"127.0.0.1:{_free_port()}" for li in spec.listeners}
        argv = spec.expand(python=self.backend.python, data=str(data), binds=binds)
        env = self._env_base()
        env.update(spec.env)
        log_path = self.ctx.paths.service_log(spec.log_name)
        log = open(log_path, "ab")  # noqa: SIM115 — closed in close(); the reader writes to it meanwhile
        try:
            # Its own session (the group is killed at teardown), tied to our life: a SIGKILLed
            # orchestrator takes its services with it (orchestrator/parent_death.py).
            proc = subprocess.Popen(
                tied_argv(argv, python=self.backend.python), cwd=data, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=log, start_new_session=True,
            )
        except OSError as exc:
            log.close()
            raise ContainerStartError(f"{spec.name} process: {exc}") from exc
        ready: dict[str, Any] = {}
        got = threading.Event()

        def read_stdout() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if not got.is_set():
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(msg, dict) and msg.get("event") == "ready":
                        ready.update(msg)
                        got.set()
            got.set()  # stdout closed: the process is gone

        reader = threading.Thread(target=read_stdout, name=f"{spec.name}-stdout", daemon=True)
        reader.start()
        self.processes[spec.name] = _Process(proc, log, reader, log_path)
        if not spec.ready_line:
            return ServiceEndpoints(spec.name, {n: f"http://{b}" for n, b in binds.items()})
        self._wait_ready_line(spec, got)
        if not ready:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1)  # stdout closed: let it finish exiting, so the post-mortem has its code
            raise ServiceUnhealthy(
                f"{spec.name} printed no ready line" + ("" if proc.poll() is None else f" (exited {proc.returncode})"),
                post_mortems=[pm] if (pm := self.service_post_mortem(spec.name)) else [],
            )
        missing = [li.name for li in spec.listeners if not isinstance(ready.get(li.name), str)]
        if missing:
            raise ServiceUnhealthy(f"{spec.name}'s ready line has no URL for {missing}: {ready}")
        return ServiceEndpoints(spec.name, {li.name: str(ready[li.name]) for li in spec.listeners})

    def _wait_ready_line(self, spec: ServiceSpec, got: threading.Event) -> None:
        """Wait for the ready line while the process makes progress (a loaded host slows its
        imports down): at most `ready_timeout_s` without progress, `health.max_wait_s` in all."""
        cap = spec.health.max_wait_s if spec.health is not None else spec.ready_timeout_s
        t0 = last_at = time.monotonic()
        progress = self.service_progress(spec.name)
        while not got.wait(2.0):
            now = time.monotonic()
            sample = self.service_progress(spec.name)
            if sample is not None and sample != progress:
                last_at, progress = now, sample
            if now - last_at >= spec.ready_timeout_s or now - t0 >= cap:
                return

    def service_running(self, name: str) -> bool:
        p = self.processes.get(name)
        return p is not None and p.proc.poll() is None

    def service_progress(self, name: str) -> dict[str, float] | None:
        """The process's CPU seconds (/proc/<pid>/stat) and its log's size."""
        p = self.processes.get(name)
        if p is None:
            return None
        out: dict[str, float] = {}
        try:
            fields = Path(f"/proc/{p.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            # utime, stime, cutime, cstime (fields 14-17; [0] here is field 3)
            out["cpu_s"] = sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
        try:
            out["log_bytes"] = float(p.log_path.stat().st_size)
        except OSError:
            pass
        return out or None

    def service_post_mortem(self, name: str) -> PostMortem | None:
        p = self.processes.get(name)
        if p is None:
            return None
        code = p.proc.poll()
        return PostMortem(
            name=f"{name} pid {p.proc.pid}",
            status="running" if code is None else "exited",
            exit_code=code,
            oom_killed=None,
            last_logs=_tail(p.log_path),
        )

    def stop_service(self, name: str) -> None:
        p = self.processes.get(name)
        if p is None or p.proc.poll() is not None:
            return
        spec = self._services[name][0] if name in self._services else None
        p.proc.send_signal(signal.SIGTERM)
        try:
            p.proc.wait(spec.stop_timeout_s if spec else self.config.stop_timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(p.proc.pid, signal.SIGKILL)
            p.proc.wait(5)

    # -- workspace -----------------------------------------------------------------------------

    def seed_workspace(self, handbook_dir: Path) -> None:
        shutil.copytree(handbook_dir, self.workspace / "handbook", symlinks=True)

    def copy_workspace(self, dest: Path) -> None:
        skipped: list[str] = []

        def ignore(folder: str, names: list[str]) -> list[str]:
            out = []
            for name in names:
                p = Path(folder) / name
                if p.is_symlink() or not (p.is_file() or p.is_dir()):
                    skipped.append(f"{p.relative_to(self.workspace)} (symlink or special file)")
                    out.append(name)
            return out

        shutil.copytree(self.workspace, dest, symlinks=False, ignore=ignore, dirs_exist_ok=True)
        if skipped:
            (self.ctx.paths.logs / "workspace-skipped.txt").write_text("\n".join(skipped) + "\n")

    def policy_path(self, mount: Mount) -> str:
        return str(mount.source)

    # -- turns ---------------------------------------------------------------------------------

    def run_turn(self, turn: TurnLaunch) -> TurnRun:
        t0 = time.monotonic()
        tdir = turn.host_turn_dir
        (tdir / "out").mkdir(parents=True, exist_ok=True)
        for name, data in turn.files.items():
            (tdir / name).write_bytes(data)
        home = self.root / f"home-{turn.n}"
        home.mkdir(mode=0o700)
        env = self._env_base()
        env.update(turn.env)
        env.update({"HOME": str(home), "WORKSPACE": str(self.workspace), "TMPDIR": str(home)})
        argv = [self.backend.python, "-m", "agent_sandbox.turn", "--turn-dir", str(tdir)]
        with open(turn.log_path, "wb") as log:
            try:
                proc = subprocess.Popen(
                    # SIGTERM when we die: the entrypoint forwards it to the system's session
                    tied_argv(argv, python=self.backend.python, sig=signal.SIGTERM),
                    cwd=self.workspace,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ContainerStartError(f"turn {turn.n} process: {exc}", phase=Phase.TURN) from exc
            started = time.monotonic()
            timed_out = False

            def stop_now() -> None:  # a cancel: SIGTERM, then SIGKILL after a short grace
                _kill_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(CANCEL_GRACE_S)
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid, signal.SIGKILL)

            with CancelWatch(turn.cancel, stop_now):
                timed_out = turn.wait_until_deadline(lambda left: proc.wait(left), (subprocess.TimeoutExpired,),
                                                     started, self.config.turn_hard_grace_s)
            if timed_out:
                _kill_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(self.config.kill_grace_s)
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid, signal.SIGKILL)
                    proc.wait()
            duration = time.monotonic() - started
        # Nothing the turn started in its session survives it (a process that left the session
        # can: this backend does not isolate).
        _kill_group(proc.pid, signal.SIGKILL)
        t_end = time.monotonic()
        shutil.rmtree(home, ignore_errors=True)
        return TurnRun(
            exit_code=proc.returncode,
            timed_out=timed_out,
            duration_s=duration,
            oom_killed=False,
            start_overhead_s=started - t0,
            cleanup_s=time.monotonic() - t_end,
            detail={"pid": proc.pid},
        )

    # -- teardown ------------------------------------------------------------------------------

    def close(self) -> list[str]:
        self.release_admissions()
        problems: list[str] = []
        for name, p in self.processes.items():
            if p.proc.poll() is None:
                _kill_group(p.proc.pid, signal.SIGKILL)
                try:
                    p.proc.wait(5)
                except subprocess.TimeoutExpired:
                    problems.append(f"{name} pid {p.proc.pid} did not exit")
            p.reader.join(timeout=5)
            p.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
        if self.root.exists():
            problems.append(f"scratch folder {self.root} not removed")
        return problems
