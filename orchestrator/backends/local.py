"""The local backend: the ERP and each turn as host subprocesses (isolation: none).

For fast development runs and for building references. Nothing here isolates anything: the
agent process runs as the orchestrator's user and could read every file on the host; every
record written by an attempt on this backend says `isolation: none`.

    <scratch_root>/<attempt id>/
      erp/        scenario.db, world.json, control.token (copies)
      workspace/  handbook/ + the agent's files
      home-<n>/   a fresh HOME for turn n, removed after the turn
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from orchestrator.backends.base import (
    AttemptContext,
    Backend,
    ErpEndpoints,
    ErpLaunch,
    Mount,
    Sandbox,
    TurnLaunch,
    TurnRun,
)
from orchestrator.config import RuntimeConfig
from orchestrator.errors import ContainerStartError, ErpUnhealthy, InfraError, Phase, PostMortem


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


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
            (root / "erp").mkdir(parents=True)
            (root / "workspace").mkdir()
        except OSError as exc:
            shutil.rmtree(root, ignore_errors=True)
            raise InfraError(f"scratch folder {root}: {exc}", phase=Phase.SETUP) from exc
        return LocalSandbox(self, ctx, root)


class LocalSandbox(Sandbox):
    """Temp folders and processes of one local attempt."""

    isolation = "none"

    def __init__(self, backend: LocalBackend, ctx: AttemptContext, root: Path):
        self.backend, self.config, self.ctx, self.root = backend, backend.config, ctx, root
        self.erp: subprocess.Popen | None = None
        self._erp_log: IO[bytes] | None = None
        self._reader: threading.Thread | None = None
        self.workspace = root / "workspace"

    def _env_base(self) -> dict[str, str]:
        """A clean environment: the host's secrets stay out; the venv's bin is on PATH for `erp`."""
        bin_dir = str(Path(self.backend.python).parent)
        return {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    # -- ERP ---------------------------------------------------------------------------------

    def start_erp(self, launch: ErpLaunch) -> ErpEndpoints:
        erp_dir = self.root / "erp"
        db, world, token = erp_dir / "scenario.db", erp_dir / "world.json", erp_dir / "control.token"
        shutil.copyfile(launch.db, db)
        shutil.copyfile(launch.world, world)
        token.write_text(launch.control_token)
        token.chmod(0o600)
        argv = [
            self.backend.python, "-m", "erp_service", "serve",
            "--db", str(db), "--world", str(world),
            "--agent-bind", "127.0.0.1:0", "--control-bind", "127.0.0.1:0",
            "--control-token-file", str(token),
        ]  # fmt: skip
        if launch.faults:
            argv += ["--faults", launch.faults]
        if launch.fault_profiles is not None:
            argv += ["--fault-profiles", str(launch.fault_profiles)]
        self._erp_log = open(self.ctx.paths.erp_log, "ab")
        try:
            self.erp = subprocess.Popen(
                argv,
                cwd=erp_dir,
                env=self._env_base(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._erp_log,
                start_new_session=True,
            )
        except OSError as exc:
            raise ContainerStartError(f"ERP process: {exc}", phase=Phase.ERP_START) from exc
        ready: dict[str, Any] = {}
        got = threading.Event()

        def read_stdout() -> None:
            assert self.erp is not None and self.erp.stdout is not None
            for line in self.erp.stdout:
                self._erp_log.write(line)  # type: ignore[union-attr]
                self._erp_log.flush()  # type: ignore[union-attr]
                if not got.is_set():
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(msg, dict) and msg.get("event") == "ready":
                        ready.update(msg)
                        got.set()
            got.set()  # stdout closed: the process is gone

        self._reader = threading.Thread(target=read_stdout, name="erp-stdout", daemon=True)
        self._reader.start()
        got.wait(self.config.erp_ready_timeout_s)
        if not ready:
            raise ErpUnhealthy(
                "ERP printed no ready line" + ("" if self.erp.poll() is None else f" (exited {self.erp.returncode})"),
                phase=Phase.ERP_START,
                post_mortems=[pm] if (pm := self.erp_post_mortem()) else [],
            )
        return ErpEndpoints(control_url=ready["control"], agent_url=ready["agent"])

    def erp_alive(self) -> bool:
        return self.erp is not None and self.erp.poll() is None

    def erp_post_mortem(self) -> PostMortem | None:
        if self.erp is None:
            return None
        code = self.erp.poll()
        return PostMortem(
            name=f"erp pid {self.erp.pid}",
            status="running" if code is None else "exited",
            exit_code=code,
            oom_killed=None,
            last_logs=_tail(self.ctx.paths.erp_log),
        )

    def stop_erp(self) -> None:
        if self.erp is None or self.erp.poll() is not None:
            return
        self.erp.send_signal(signal.SIGTERM)
        try:
            self.erp.wait(self.config.stop_timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(self.erp.pid, signal.SIGKILL)
            self.erp.wait(5)

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
                    argv, cwd=self.workspace, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            except OSError as exc:
                raise ContainerStartError(f"turn {turn.n} process: {exc}", phase=Phase.TURN) from exc
            started = time.monotonic()
            timed_out = False
            try:
                proc.wait(turn.budget_s + self.config.turn_hard_grace_s)
            except subprocess.TimeoutExpired:
                timed_out = True
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
        problems: list[str] = []
        if self.erp is not None and self.erp.poll() is None:
            _kill_group(self.erp.pid, signal.SIGKILL)
            try:
                self.erp.wait(5)
            except subprocess.TimeoutExpired:
                problems.append(f"ERP pid {self.erp.pid} did not exit")
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._erp_log is not None:
            self._erp_log.close()
        shutil.rmtree(self.root, ignore_errors=True)
        if self.root.exists():
            problems.append(f"scratch folder {self.root} not removed")
        return problems
