"""`orchestrate debug` brings up the web UI beside the ERP, published on host loopback only.

The command is run as the operator runs it (a subprocess, no terminal: no shell is opened) on
payment-run seed 0 with its own runs root, ports and subnets; a plain HTTP client opens the
printed sign-in link and reads the home page (the business date comes from the agent API, the
ERP reached by its compose service name). The engine's port bindings say what is published:
the web UI and the control API on 127.0.0.1, nothing else. `--down` removes the stack.
"""
from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from repo_paths import REPO_ROOT

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.heavy]  # ~40 s (two CLI runs, scenario and image checks): make test-heavy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _debug(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", "debug", "payment-run", "--seed", "0", *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)


def test_debug_profile_serves_the_web_ui_on_loopback(tmp_path: Path, docker_client: Any, images: Any) -> None:
    control_port, web_port = _free_port(), _free_port()
    where = ["--runs-root", str(tmp_path / "runs")]
    up = _debug("--no-shell", "--port", str(control_port), "--web-port", str(web_port), "--subnet", "10.232.0.96/27", *where)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        link = re.search(r"^web UI:\s+(http://127\.0\.0\.1:(\d+)/login\?key=\S+)", up.stdout, re.M)
        assert link and int(link.group(2)) == web_port, up.stdout
        person = httpx.Client(base_url=f"http://127.0.0.1:{web_port}", trust_env=False, timeout=30)
        assert person.get(link.group(1)).status_code == 303
        home = person.get("/")
        assert home.status_code == 200 and "Business date <strong>2026-10-08</strong>" in home.text, home.text[:2000]
        assert "turn-panel" not in home.text  # no turns in the debug profile: the UI is always usable

        stack = {c.labels.get("pb.role"): c for c in docker_client.containers.list(filters={"label": "pb.debug=1"})
                 if c.name.startswith("pbdebug-payment-run-seed-0-")}
        assert set(stack) == {"erp", "web"}, sorted(stack)  # no agent shell was opened
        bindings = {role: c.attrs["HostConfig"]["PortBindings"] for role, c in stack.items()}
        assert bindings == {"web": {"8090/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(web_port)}]},
                            "erp": {"8081/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(control_port)}]}}, bindings
        web_nets = stack["web"].attrs["NetworkSettings"]["Networks"]
        assert sorted(n.rsplit("_", 1)[-1] for n in web_nets) == ["attempt", "web"], sorted(web_nets)  # never `control`
    finally:
        down = _debug("--down", *where)
    assert down.returncode == 0, down.stderr
    left = [c.name for c in docker_client.containers.list(all=True, filters={"label": "pb.debug=1"})
            if c.name.startswith("pbdebug-payment-run-seed-0-")]
    left += [n.name for n in docker_client.networks.list(filters={"label": "pb.debug=1"})
             if n.name.startswith("pbdebug-payment-run-seed-0-")]
    assert left == [], left
    assert not (tmp_path / "runs" / "debug" / "payment-run-seed-0").exists()
