"""bb-erp API latency and throughput beside a bare FastAPI app on the same server stack.

    .venv/bin/python bench/erp_api.py [--db scenario.db --token SECRET] [--reads 200] [--writes 200]
                                      [--rps-requests 200] [--json]

Starts a real `python -m erp_service serve` on a copy of the payment-run scenario database
(seed 0, generated and cached by `orchestrator.scenarios.cache` if missing; or `--db`/`--token`), and a
bare FastAPI app served by uvicorn with the same settings that answers the same two routes with
a constant. Against each, on loopback only, with bounded loops:

- median and p99 latency of a typical read, `GET /ap-invoices?limit=50`;
- median and p99 latency of a typical write, `POST /outbox` with a fresh Idempotency-Key;
- requests per second of the read and of the write at concurrency 1 and 8;
- the server process's CPU time per sequential read and write (from /proc: user + system, all
  of its threads), which a loaded machine inflates far less than it does latency.

Both servers run at once and every figure is measured in `--rounds` alternating batches (bb-erp,
then bare, then bb-erp...), so a shared machine's load falls on both alike. Prints the figures
side by side with the ratio bb-erp / bare (for latency: how many times slower; for throughput:
the share of the bare app's rate), and issue 42's Done-when line: read and write median <= 1.5 x
the bare app. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI, Request

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

READ_PATH = "/ap-invoices?limit=50"
WRITE_PATH = "/outbox"
CONTROL_TOKEN = "bench-control-token-0123456789"
READY_TIMEOUT_S = 60
WARMUP = 20


# --- the bare app ---------------------------------------------------------------------------


def bare_app():
    """FastAPI with the two benchmarked routes answering constants (no auth, no database)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    listing = {"business_date": "2026-10-08", "data": {"items": [], "total": 0, "offset": 0, "limit": 50}}
    sent = {"business_date": "2026-10-08", "data": {"id": "MSG-1", "status": "sent"}}

    @app.get("/ap-invoices")
    def read(limit: int = 200) -> dict:
        return listing

    @app.post("/outbox", status_code=201)
    async def write(request: Request) -> dict:
        await request.body()
        return sent

    return app


def serve_bare() -> int:
    """`--serve-bare`: uvicorn on 127.0.0.1, an OS-chosen port, the settings bb-erp's serve uses;
    prints a ready line like bb-erp's and runs until SIGTERM."""
    import uvicorn
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # as erp_service.server._listen
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(bare_app(), log_level="warning", access_log=False, lifespan="off",
                                           timeout_graceful_shutdown=5))
    port = sock.getsockname()[1]

    def announce() -> None:
        while not server.started:
            time.sleep(0.01)
        print(json.dumps({"event": "ready", "agent": f"http://127.0.0.1:{port}"}), flush=True)
    threading.Thread(target=announce, daemon=True).start()
    server.run(sockets=[sock])
    return 0


# --- servers --------------------------------------------------------------------------------


def start(cmd: list[str]) -> tuple[subprocess.Popen, str]:
    """Start a server process; its agent URL from the ready line."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            break
        event = json.loads(line)
        if event.get("event") == "ready":
            return proc, event["agent"]
    proc.kill()
    raise SystemExit(f"server did not start: {' '.join(cmd)}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def scenario_db() -> tuple[Path, str]:
    """The payment-run scenario (seed 0): its database and the agent's token."""
    from orchestrator.scenarios.cache import ensure_scenario
    print("preparing the payment-run scenario (cached after the first time)...", file=sys.stderr, flush=True)
    scen = ensure_scenario("payment-run", 0, reference=False)
    meta = json.loads((scen.dir / "scenario.json").read_text())
    return scen.dir / "scenario.db", meta["agent_token"]


# --- the client -----------------------------------------------------------------------------


class Client:
    """One keep-alive HTTP/1.1 connection (http.client: the lightest client in the stdlib, so the
    client's own cost stays small beside the server's)."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)  # type: ignore[arg-type]
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.auth = {"Authorization": f"Bearer {token}"}

    def read(self, _: int) -> int:
        self.conn.request("GET", READ_PATH, headers=self.auth)
        r = self.conn.getresponse()
        r.read()
        return r.status

    def write(self, n: int) -> int:
        # Bytes, so http.client sends headers and body in one segment (no Nagle/delayed-ACK stall).
        body = json.dumps({"to": "priya.raman", "subject": f"Bench note {n}", "body": "Benchmark message."}).encode()
        self.conn.request("POST", WRITE_PATH, body=body,
                          headers={**self.auth, "Content-Type": "application/json", "Idempotency-Key": f"bench-{n}"})
        r = self.conn.getresponse()
        r.read()
        return r.status

    def close(self) -> None:
        self.conn.close()


class Counter:
    """Unique numbers across threads (for idempotency keys and subjects)."""

    def __init__(self, start: int) -> None:
        self.n = start
        self.lock = threading.Lock()

    def next(self) -> int:
        with self.lock:
            self.n += 1
            return self.n


def latencies(client: Client, op: Callable[[int], int], count: int, counter: Counter, ok: int) -> list[float]:
    """Sequential requests; each one's latency in milliseconds."""
    out = []
    for _ in range(count):
        t0 = time.perf_counter()
        status = op(counter.next())
        out.append((time.perf_counter() - t0) * 1000)
        if status != ok:
            raise SystemExit(f"unexpected status {status}")
    return out


def throughput(url: str, token: str, which: str, concurrency: int, total: int, counter: Counter, ok: int) -> float:
    """Requests per second with `concurrency` connections sharing `total` requests."""
    clients = [Client(url, token) for _ in range(concurrency)]
    for c in clients:          # open every connection before timing
        getattr(c, which)(counter.next())
    share = [total // concurrency + (1 if i < total % concurrency else 0) for i in range(concurrency)]
    errors: list[str] = []
    barrier = threading.Barrier(concurrency + 1)

    def work(c: Client, n: int) -> None:
        barrier.wait()
        for _ in range(n):
            status = getattr(c, which)(counter.next())
            if status != ok:
                errors.append(str(status))
    threads = [threading.Thread(target=work, args=(c, n)) for c, n in zip(clients, share, strict=False)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    for c in clients:
        c.close()
    if errors:
        raise SystemExit(f"unexpected statuses: {sorted(set(errors))}")
    return total / elapsed


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` so far (all threads), or None without /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[98] if len(xs) > 1 else xs[0]


def measure(servers: dict[str, tuple[str, Counter, int]], token: str,
            args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Every figure against every server, in alternating batches."""
    lat: dict[str, dict[str, list[float]]] = {name: {"read": [], "write": []} for name in servers}
    cpu: dict[str, dict[str, float]] = {name: {"read": 0.0, "write": 0.0} for name in servers}
    rps: dict[str, dict[str, list[float]]] = {name: {} for name in servers}
    for n in range(args.rounds):
        for name, (url, counter, pid) in servers.items():
            # A fresh connection per batch: the server drops one idle beyond its keep-alive timeout.
            c = Client(url, token)
            warm = WARMUP if n == 0 else 3
            latencies(c, c.read, warm, counter, 200)
            latencies(c, c.write, warm, counter, 201)
            for which, op, ok, count in (("read", c.read, 200, args.reads), ("write", c.write, 201, args.writes)):
                before = process_cpu_s(pid)
                lat[name][which] += latencies(c, op, max(1, count // args.rounds), counter, ok)
                after = process_cpu_s(pid)
                if before is not None and after is not None:
                    cpu[name][which] += after - before
            c.close()
            for which, ok in (("read", 200), ("write", 201)):
                for conc in (1, 8):
                    rate = throughput(url, token, which, conc, max(conc, args.rps_requests // args.rounds), counter, ok)
                    rps[name].setdefault(f"{which} req/s c={conc}", []).append(rate)
    out: dict[str, dict[str, float]] = {}
    for name in servers:
        reads, writes = lat[name]["read"], lat[name]["write"]
        out[name] = {"read median ms": statistics.median(reads), "read p99 ms": p99(reads),
                     "write median ms": statistics.median(writes), "write p99 ms": p99(writes)}
        if cpu[name]["read"] > 0 and cpu[name]["write"] > 0:
            out[name]["read CPU ms"] = cpu[name]["read"] * 1000 / len(reads)
            out[name]["write CPU ms"] = cpu[name]["write"] * 1000 / len(writes)
        out[name].update({k: statistics.median(v) for k, v in rps[name].items()})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="a bb-erp database to copy (default: the payment-run scenario)")
    parser.add_argument("--token", help="a user token of --db that may read AP invoices and send messages")
    parser.add_argument("--reads", type=int, default=200, help="sequential reads for latency")
    parser.add_argument("--writes", type=int, default=200, help="sequential writes for latency")
    parser.add_argument("--rps-requests", type=int, default=200, help="requests per throughput figure")
    parser.add_argument("--rounds", type=int, default=5, help="alternating batches per figure (default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_bare:
        return serve_bare()
    if args.db and not args.token:
        parser.error("--db needs --token")
    for name in ("reads", "writes", "rps_requests", "rounds"):
        if not 1 <= getattr(args, name) <= 100_000:
            parser.error(f"--{name.replace('_', '-')} must be between 1 and 100000")
    src, token = (args.db, args.token) if args.db else scenario_db()

    with tempfile.TemporaryDirectory(prefix="bench-erp-") as tmp:
        db = Path(tmp) / "bench.db"
        shutil.copy(src, db)
        token_file = Path(tmp) / "control.token"
        token_file.write_text(CONTROL_TOKEN)
        cmds = {
            "bb-erp": [sys.executable, "-m", "erp_service", "serve", "--db", str(db), "--agent-bind", "127.0.0.1:0",
                       "--control-bind", "127.0.0.1:0", "--control-token-file", str(token_file)],
            "bare": [sys.executable, str(Path(__file__).resolve()), "--serve-bare"],
        }
        procs: list[subprocess.Popen] = []
        try:
            servers: dict[str, tuple[str, Counter, int]] = {}
            for name, cmd in cmds.items():
                proc, url = start(cmd)
                procs.append(proc)
                servers[name] = (url, Counter(0 if name == "bb-erp" else 10**6), proc.pid)
            results = measure(servers, token, args)
        finally:
            for proc in procs:
                stop(proc)

    erp, bare = results["bb-erp"], results["bare"]
    ratios = {k: erp[k] / bare[k] for k in erp if k in bare}
    if args.json:
        print(json.dumps({"bb-erp": erp, "bare": bare, "ratio": ratios}, indent=1))
        return 0
    print(f"bb-erp vs a bare FastAPI+uvicorn app (loopback; read {READ_PATH}, write POST {WRITE_PATH} keyed)")
    print(f"{'figure':<22}{'bb-erp':>12}{'bare':>12}{'ratio':>10}")
    for k in ratios:
        print(f"{k:<22}{erp[k]:>12.2f}{bare[k]:>12.2f}{ratios[k]:>9.2f}x")
    print("ratio = bb-erp / bare: latency and CPU (the server's, per sequential request), times more; "
          "req/s, share of the bare rate.")
    print(f"Done-when (issue 42: median <= 1.5 x the bare app): read {ratios['read median ms']:.2f}x, "
          f"write {ratios['write median ms']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
