"""A real `python -m erp_mcp serve` process in front of a real ERP, for tests and the bench."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
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
