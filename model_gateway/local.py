"""Run the gateway and the fake provider as local processes (tests, benchmarks, debugging).

Each is a real `python -m model_gateway ...` process on loopback; `start_*` waits for its ready
line and returns a handle whose `stop()` ends it.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 20.0


@dataclass
class LocalProcess:
    """A started process and what its ready line said."""

    proc: subprocess.Popen[str]
    ready: dict[str, Any]
    workdir: Path
    stderr_path: Path
    control_token: str | None = None
    files: dict[str, Path] = field(default_factory=dict)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def output(self) -> str:
        """Everything the process wrote to stderr so far."""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def _start(args: list[str], workdir: Path, env: dict[str, str] | None = None) -> LocalProcess:
    stderr_path = workdir / "stderr.txt"
    with open(stderr_path, "w", encoding="utf-8") as err:
        proc = subprocess.Popen([sys.executable, "-m", "model_gateway", *args], stdout=subprocess.PIPE, stderr=err,
                                text=True, cwd=workdir, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + READY_TIMEOUT_S
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if doc.get("event") == "ready":
            return LocalProcess(proc=proc, ready=doc, workdir=workdir, stderr_path=stderr_path)
        if doc.get("event") == "error":
            proc.wait(timeout=5)
            raise RuntimeError(f"model_gateway {args[0]} refused to start: {doc.get('detail')}")
    proc.kill()
    proc.wait(timeout=5)
    raise RuntimeError(f"model_gateway {args[0]} did not become ready: {stderr_path.read_text()[-2000:]}")


def start_fake_provider(script: dict[str, Any] | Path, *, workdir: Path | None = None,
                        rate_limit_rpm: int | None = None) -> LocalProcess:
    """The fake provider on 127.0.0.1:<free port>, playing `script` (a document or a file);
    answering 429 beyond `rate_limit_rpm` model calls a minute when given."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="pb-fake-"))
    if isinstance(script, dict):
        path = workdir / "script.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        script = path
    record = workdir / "received.jsonl"
    limit = ["--rate-limit-rpm", str(rate_limit_rpm)] if rate_limit_rpm else []
    handle = _start(["fake-provider", "--script", str(script), "--bind", "127.0.0.1:0", "--record", str(record), *limit],
                    workdir)
    handle.files = {"script": script, "record": record}
    return handle


def free_port() -> int:
    """A TCP port free on loopback right now (for a config that must name its own address)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_gateway(config: dict[str, Any], secrets_doc: dict[str, Any], *, workdir: Path | None = None,
                  proxy_port: int = 0) -> LocalProcess:
    """The gateway on 127.0.0.1 (proxy on `proxy_port`, 0: a free one; control on a free port)
    with this config and these keys."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="pb-gateway-"))
    token = secrets.token_urlsafe(24)
    paths = {"config": workdir / "config.json", "secrets": workdir / "secrets.json", "token": workdir / "control-token",
             "usage_log": workdir / "usage-log.jsonl"}
    paths["config"].write_text(json.dumps(config), encoding="utf-8")
    paths["secrets"].write_text(json.dumps(secrets_doc), encoding="utf-8")
    paths["token"].write_text(token, encoding="utf-8")
    handle = _start(["serve", "--config", str(paths["config"]), "--secrets-file", str(paths["secrets"]),
                     "--proxy-bind", f"127.0.0.1:{proxy_port}", "--control-bind", "127.0.0.1:0",
                     "--control-token-file", str(paths["token"]), "--usage-log", str(paths["usage_log"])], workdir)
    handle.control_token = token
    handle.files = paths
    return handle
