"""A real `python -m erp_mcp serve` process in front of a real ERP, for tests and the bench."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 180


class McpServed:
    """One running MCP server with its ready line."""

    def __init__(self, proc: subprocess.Popen, ready: dict[str, Any], stderr: list[str]) -> None:
        self.proc, self.ready, self.stderr = proc, ready, stderr

    @property
    def url(self) -> str:
        """The streamable HTTP endpoint."""
        return self.ready["mcp"] + "/mcp"

    def stop(self) -> int:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode


def start_mcp(erp_url: str, *, extra: list[str] | None = None) -> McpServed:
    """Start the server on a free loopback port and wait for its ready line."""
    proc = subprocess.Popen([sys.executable, "-m", "erp_mcp", "serve", "--erp-url", erp_url, "--bind", "127.0.0.1:0", *(extra or [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr: list[str] = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr or []), daemon=True).start()
    box: dict[str, Any] = {}

    def read() -> None:
        for line in proc.stdout or []:
            if line.startswith("{") and '"ready"' in line:
                box["ready"] = json.loads(line)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT_S)
    if "ready" not in box:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"erp_mcp printed no ready line (exit {proc.returncode}): {''.join(stderr)[-2000:]}")
    return McpServed(proc, box["ready"], stderr)


def scenario_db_copy(scenario: Any, tmp: Path) -> Path:
    """A private copy of a scenario's database (the ERP opens it in place)."""
    dest = tmp / "scenario.db"
    dest.write_bytes(Path(scenario.db).read_bytes())
    return dest


class ModelTurnStack:
    """A real ERP, its MCP server, a fake model provider and the model gateway in front of it, as
    local processes: what one harness turn over MCP needs (tests/erp_mcp/test_mcp_*_local.py)."""

    def __init__(self, erp: Any, mcp: McpServed, fake: Any, gateway: Any) -> None:
        self.erp, self.mcp, self.fake, self.gateway = erp, mcp, fake, gateway

    def received(self) -> list[dict[str, Any]]:
        """The requests the fake provider received, in order."""
        import httpx

        return httpx.get(self.fake.ready["url"] + "/_fake/requests", trust_env=False).json()["items"]

    def agent_requests(self) -> list[dict[str, Any]]:
        """The ERP's audit rows of the agent's API requests."""
        rows = self.erp.control.get("/control/audit", params={"after": 0, "limit": 1000}).json()["items"]
        return [r for r in rows if r["channel"] == "api"]

    def turn(self, tmp: Path, system: str, binary: tuple[str, Path], prompt: str, token: str, vkey: str,
             model: str) -> tuple[Path, Path, dict[str, str]]:
        """Write one MCP turn's folder for the built-in `system` with its CLI `binary` (name, path)
        linked in; return (turn dir, home, the turn's environment)."""
        import os

        from agent_sandbox.systems import BUILTIN_SYSTEMS

        turn_dir, home, workspace = tmp / "turn", tmp / "home", tmp / "workspace"
        for d in (turn_dir / "out", home, workspace, turn_dir / "bin"):
            d.mkdir(parents=True)
        os.symlink(binary[1], turn_dir / "bin" / binary[0])
        spec = BUILTIN_SYSTEMS[system]
        assert spec.model is not None
        (turn_dir / "prompt.txt").write_text(prompt)
        (turn_dir / "system.json").write_text(json.dumps({**spec.system_json({}), "interface": "mcp"}))
        (turn_dir / "context.json").write_text(json.dumps({"turn": 1, "date": "2026-10-08", "budget_s": 240}))
        env = {"PATH": f"{turn_dir / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin",
               "HOME": str(home), "WORKSPACE": str(workspace), "ERP_URL": self.erp.ready["agent"], "ERP_TOKEN": token,
               "ERP_MCP_URL": self.mcp.url, "TURN_BUDGET_S": "240",
               **spec.model.turn_env(self.gateway.ready["proxy"], vkey, model)}
        return turn_dir, home, env


@contextmanager
def model_turn_stack(tmp: Path, scenario: Any, script: dict[str, Any], *, provider: str, model: str,
                     attempt_id: str, real_key: str, vkey: str) -> Iterator[ModelTurnStack]:
    """Start the ERP (a copy of `scenario`), its MCP server, the fake provider playing `script` and
    a gateway serving `model` of `provider` through it; stop them all on the way out."""
    from erp_server import start_server

    from model_gateway.local import free_port, start_fake_provider, start_gateway

    for d in ("fake", "gw", "erp"):
        (tmp / d).mkdir()
    world = json.loads(Path(scenario.world).read_text())
    erp = start_server(tmp / "erp", scenario_db_copy(scenario, tmp / "erp"), world=world)
    mcp = start_mcp(erp.ready["agent"])
    fake = start_fake_provider(script, workdir=tmp / "fake")
    port = free_port()
    gateway = start_gateway({"attempt_id": attempt_id, "hosts": [f"127.0.0.1:{port}"],
                             "providers": {provider: {"base_url": fake.ready["url"], "models": [model]}}},
                            {"upstream_keys": {provider: real_key}, "virtual_keys": [vkey]},
                            workdir=tmp / "gw", proxy_port=port)
    try:
        yield ModelTurnStack(erp, mcp, fake, gateway)
    finally:
        gateway.stop()
        fake.stop()
        mcp.stop()
        erp.stop()
