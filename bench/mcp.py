"""The MCP server's latency per tool call beside the same call over HTTP (issue 17).

    .venv/bin/python bench/mcp.py [--calls 100] [--json]

Starts bb-erp on the payment-run seed 0 scenario and the MCP server in front of it (real
`python -m erp_service serve` and `python -m erp_mcp serve` processes on loopback), opens one
MCP SDK session with the agent's token, then alternates, call by call (so machine noise falls
on both alike):

- a read: `GET /vendors/V-0101` over HTTP and the tool `read_vendors_by_id` over MCP;
- a write: `POST /outbox` (a short internal note, each with its own Idempotency-Key) and the
  tool `msg_send`.

Prints p50 and p90 latency of each way and the ratio MCP / HTTP, from this one run. Nothing is
asserted. The scratch copy of the database is removed at the end.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
# This file is named like the MCP SDK's package: keep bench/ off the path so `mcp` is the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(REPO))

from agent_sandbox.mcp_client import McpSession  # noqa: E402
from orchestrator.scenarios.cache import ensure_scenario  # noqa: E402

CONTROL_TOKEN = "bench-control-token-0123456789"


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, in milliseconds."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def _ready(proc: subprocess.Popen[str], what: str, timeout_s: float = 300) -> dict[str, Any]:
    box: dict[str, Any] = {}

    def read() -> None:
        for line in proc.stdout or []:
            if '"ready"' in line:
                box["ready"] = json.loads(line)
                return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout_s)
    if "ready" not in box:
        proc.kill()
        raise SystemExit(f"bench/mcp.py: {what} printed no ready line")
    return box["ready"]


def run(calls: int) -> dict[str, Any]:
    """Start both servers, time `calls` of each kind both ways, stop them."""
    scenario = ensure_scenario("payment-run", 0)
    token = str(scenario.meta["agent_token"])
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    procs: list[subprocess.Popen[str]] = []
    try:
        shutil.copy(scenario.db, tmp / "scenario.db")
        (tmp / "control.token").write_text(CONTROL_TOKEN)
        erp = subprocess.Popen([sys.executable, "-m", "erp_service", "serve", "--db", str(tmp / "scenario.db"),
                                "--world", str(scenario.world), "--agent-bind", "127.0.0.1:0", "--control-bind", "127.0.0.1:0",
                                "--control-token-file", str(tmp / "control.token")],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(erp)
        agent_url = _ready(erp, "the ERP")["agent"]
        mcp = subprocess.Popen([sys.executable, "-m", "erp_mcp", "serve", "--erp-url", agent_url, "--bind", "127.0.0.1:0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(mcp)
        mcp_url = _ready(mcp, "the MCP server")["mcp"] + "/mcp"
        times: dict[str, list[float]] = {"read_http": [], "read_mcp": [], "write_http": [], "write_mcp": []}
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=agent_url, headers=headers, timeout=60, trust_env=False) as http, McpSession(mcp_url, token) as session:
            session.call_tool("read_whoami", {})  # warm both paths up
            http.get("/whoami")
            for i in range(calls):
                t = time.perf_counter()
                assert http.get("/vendors/V-0101").status_code == 200
                times["read_http"].append(time.perf_counter() - t)
                t = time.perf_counter()
                assert not session.call_tool("read_vendors_by_id", {"vendor_id": "V-0101"}).is_error
                times["read_mcp"].append(time.perf_counter() - t)
                note = {"to": "controller", "subject": f"Bench note {i}", "body": "Latency probe."}
                t = time.perf_counter()
                assert http.post("/outbox", json=note, headers={"Idempotency-Key": f"bench-http-{i}"}).status_code == 201
                times["write_http"].append(time.perf_counter() - t)
                t = time.perf_counter()
                assert not session.call_tool("msg_send", {**note, "Idempotency-Key": f"bench-mcp-{i}"}).is_error
                times["write_mcp"].append(time.perf_counter() - t)
        out: dict[str, Any] = {"calls": calls}
        for kind in ("read", "write"):
            h, m = times[f"{kind}_http"], times[f"{kind}_mcp"]
            out[kind] = {"http_p50_ms": round(pct(h, 0.5), 2), "http_p90_ms": round(pct(h, 0.9), 2),
                         "mcp_p50_ms": round(pct(m, 0.5), 2), "mcp_p90_ms": round(pct(m, 0.9), 2),
                         "ratio_p50": round(statistics.median(m) / statistics.median(h), 2)}
        return out
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.calls)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{args.calls} calls each way, alternating (ms)")
    print(f"{'call':8} {'HTTP p50':>9} {'HTTP p90':>9} {'MCP p50':>9} {'MCP p90':>9} {'MCP/HTTP':>9}")
    for kind in ("read", "write"):
        r = result[kind]
        print(f"{kind:8} {r['http_p50_ms']:9.2f} {r['http_p90_ms']:9.2f} {r['mcp_p50_ms']:9.2f} {r['mcp_p90_ms']:9.2f} {r['ratio_p50']:8.2f}x")


if __name__ == "__main__":
    main()
