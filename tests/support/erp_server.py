"""A real `python -m erp_service serve` process for tests (ready line, both listeners, shutdown),
and small helpers around it: tokens, a cheap audited write, the business state of a database."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
from repo_paths import REPO_ROOT
from sqlalchemy import select

from erp_service.kernel.db import Database

REPO = REPO_ROOT
CONTROL_TOKEN = "control-token-0123456789abcdef"
READY_TIMEOUT_S = 30


def copy_db(template, tmp_path: Path, name: str = "company.db") -> Path:
    dest = tmp_path / name
    shutil.copy(template[0], dest)
    return dest


def auth(secret: str, key: str | None = None) -> dict[str, str]:
    h = {"Authorization": f"Bearer {secret}"}
    if key:
        h["Idempotency-Key"] = key
    return h


def message(n: int | str) -> dict[str, Any]:
    """A small outbox message: the cheapest audited write that creates a document."""
    return {"to": "controller", "subject": f"Note {n}", "body": f"Body of note {n}."}


# --- the serve process ----------------------------------------------------------------------


class Served:
    """One running `python -m erp_service serve` with its ready line."""

    def __init__(self, proc: subprocess.Popen, ready: dict[str, Any], lines: list[str]) -> None:
        self.proc = proc
        self.ready = ready
        self.lines = lines          # every stdout line, filled by a reader thread
        self.agent = httpx.Client(base_url=ready["agent"], timeout=30)
        self.control = httpx.Client(base_url=ready["control"], timeout=30,
                                    headers={"Authorization": f"Bearer {CONTROL_TOKEN}"})

    def stop(self) -> int:
        """Shut down through the control API (or kill if that fails); the exit code."""
        self.agent.close()
        if self.proc.poll() is None:
            try:
                self.control.post("/control/shutdown")
            except httpx.HTTPError:
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.control.close()
        return self.proc.returncode


def start_server(tmp_path: Path, db: Path, *, faults: str | None = None, world: dict | None = None,
                 python_prelude: str | None = None, extra_args: list[str] | None = None) -> Served:
    """Start the server on loopback ports chosen by the OS and wait for its ready line.

    `python_prelude` runs before the CLI in the same interpreter (used to observe whether the
    fault layer is ever constructed)."""
    token_file = tmp_path / "control.token"
    token_file.write_text(CONTROL_TOKEN + "\n")
    args = ["serve", "--db", str(db), "--agent-bind", "127.0.0.1:0", "--control-bind", "127.0.0.1:0",
            "--control-token-file", str(token_file)]
    if world is not None:
        wf = tmp_path / "world.json"
        wf.write_text(json.dumps(world))
        args += ["--world", str(wf)]
    if faults:
        args += ["--faults", faults]
    args += extra_args or []
    if python_prelude:
        code = python_prelude + "\nimport sys\nfrom erp_service.__main__ import main\nsys.exit(main(sys.argv[1:]))\n"
        cmd = [sys.executable, "-c", code, *args]
    else:
        cmd = [sys.executable, "-m", "erp_service", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready_seen = threading.Event()

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line.strip())
            if '"ready"' in line:
                ready_seen.set()
        ready_seen.set()   # end of output: the process has gone
    threading.Thread(target=read, daemon=True).start()

    def drain_stderr() -> None:   # an unread pipe would block the server once it fills
        for _ in proc.stderr:  # type: ignore[union-attr]
            pass
    threading.Thread(target=drain_stderr, daemon=True).start()
    ready_seen.wait(READY_TIMEOUT_S)
    try:
        ready = next((json.loads(x) for x in lines if '"ready"' in x), None)
        assert ready is not None, f"no ready line: {lines}"
        return Served(proc, ready, lines)
    except BaseException:
        proc.kill()   # never leave a server behind
        proc.wait()
        raise


def business_state(db: Database) -> str:
    """Hash of every table but the audit log and the idempotency store."""
    from erp_service.kernel.schema import metadata
    out = {}
    with db.transaction() as conn:
        for name, table in sorted(metadata.tables.items()):
            if name in ("audit_events", "idempotency"):
                continue
            cols = [c for c in table.c if not (c.name == "wall_time" or c.name.endswith("_wall"))]
            out[name] = sorted(json.dumps(list(r), default=str) for r in conn.execute(select(*cols)))
    return json.dumps(out, sort_keys=True)


