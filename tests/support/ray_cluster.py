"""A real Ray cluster on this machine for tests and the bench: a head and named worker nodes.

Every node is its own `ray start --block` process in its own session, with its own free ports
(several raylets on one host), so a node can be killed alone (SIGKILL to its whole process tree,
the Ray workers included: they sit in sessions of their own) and the cluster stopped by process
ids, never by name. Each worker node advertises `docker_slots` and gets its own environment
(`PB_RAY_NODE` its name, its own scenario cache and scratch folder), so a campaign on it
receives the scenarios from the head like a node on another host.

Ray is heavy on a small machine: the head runs no tasks (`--num-cpus=0`), object stores are
small, the dashboard is off; on a loaded machine a raylet can miss Ray's 30 s registration
deadline, so each start is retried.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY_BIN = Path(sys.executable).with_name("ray")
OBJECT_STORE_BYTES = 80 * 2**20


def ray_missing() -> str | None:
    """Why the cluster cannot run here (the reason of a skip), or None."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install -e '.[ray]')"
    if not RAY_BIN.exists():
        return f"no ray command beside {sys.executable}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot): with the pid, its identity."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_tree(pid: int) -> list[int]:
    """`pid` and every process descended from it."""
    kids = _children()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


@dataclass
class Node:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    # Every process seen in its tree, with its start time: Ray's workers outlive a killed raylet
    # for a moment, reparented; a pid whose start time changed is another process (never killed).
    pids: dict[int, str] = field(default_factory=dict)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def remember(self) -> None:
        for pid in process_tree(self.proc.pid):
            started = start_time(pid)
            if started is not None:
                self.pids.setdefault(pid, started)


class LocalRayCluster:
    """`start()` a head and workers (`{name: docker slots}`), `kill(name)`, `stop()`."""

    def __init__(self, workers: dict[str, int], *, root: Path | None = None, start_timeout_s: float = 240.0) -> None:
        # Ray's unix sockets live under the temp dir: keep its path short.
        self.root = Path(root or tempfile.mkdtemp(prefix="pbray-", dir="/tmp"))
        self.workers = workers
        self.start_timeout_s = start_timeout_s
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, Node] = {}
        self._client_ready = False

    # -- environment
    def node_env(self, name: str | None) -> dict[str, str]:
        # A loaded machine: the raylet waits longer for its agents to come up (default 30 s).
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_DEDUP_LOGS="0", RAY_agent_register_timeout_ms="180000")
        env.pop("RAY_ADDRESS", None)
        if name is not None:
            env.update(PB_RAY_NODE=name, PB_SCENARIO_CACHE=str(self.root / name / "scenarios"),
                       PB_SCRATCH_ROOT=str(self.root / name / "scratch"))
        return env

    def _ports(self, index: int) -> list[str]:
        low = 21000 + 700 * index + (os.getpid() % 50) * 10  # worker ports: a range per node
        return [
            f"--node-manager-port={_free_port()}", f"--object-manager-port={_free_port()}",
            f"--metrics-export-port={_free_port()}", f"--dashboard-agent-listen-port={_free_port()}",
            f"--dashboard-agent-grpc-port={_free_port()}", f"--runtime-env-agent-port={_free_port()}",
            f"--min-worker-port={low}", f"--max-worker-port={low + 199}",
        ]

    def _launch(self, name: str, args: list[str], env: dict[str, str], ready: str) -> Node:
        log = self.root / f"{name}.log"
        common = ["--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1",
                  f"--object-store-memory={OBJECT_STORE_BYTES}"]
        with open(log, "wb") as fh:
            proc = subprocess.Popen([str(RAY_BIN), "start", *common, *self._ports(len(self.nodes)), *args],
                                    env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        node = Node(name, proc, log)
        deadline = time.monotonic() + self.start_timeout_s
        while node.alive() and ready not in log.read_text(errors="replace") and time.monotonic() < deadline:
            time.sleep(0.5)
        node.remember()
        return node

    # -- lifecycle
    def start(self) -> LocalRayCluster:
        try:
            head_args = ["--head", f"--port={self.port}", "--include-dashboard=false", "--num-cpus=0",
                         f"--temp-dir={self.root / 'ray'}"]
            self._start_node("head", head_args, None)
            for name, slots in self.workers.items():
                self._start_node(name, [f"--address={self.address}", "--num-cpus=0",
                                        f'--resources={{"docker_slots": {slots}}}'], name)
            self.wait_slots(sum(self.workers.values()))
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, name: str, args: list[str], env_name: str | None) -> None:
        for _ in range(3):  # a loaded machine: the raylet may miss Ray's registration deadline
            node = self._launch(name, args, self.node_env(env_name), "Ray runtime started")
            if node.alive():
                self.nodes[name] = node
                return
            tail = "\n".join(node.log.read_text(errors="replace").splitlines()[-15:])
            self._kill(node)
        raise RuntimeError(f"ray node {name} did not start (3 tries); its last lines:\n{tail}")

    def slots(self) -> int:
        """Docker slots of the nodes alive, as the cluster's GCS reports them."""
        out = subprocess.run([str(RAY_BIN), "status", f"--address={self.address}"], env=self.node_env(None),
                             capture_output=True, text=True, timeout=120)
        for line in out.stdout.splitlines():
            if "docker_slots" in line:  # "0.0/2.0 docker_slots"
                return int(float(line.split("/")[1].split()[0]))
        return 0

    def wait_slots(self, want: int, timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.slots() < want:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster shows fewer than {want} docker_slots after {timeout_s:.0f}s")
            time.sleep(1)
        for node in self.nodes.values():
            node.remember()

    def pause(self, name: str) -> None:
        """SIGSTOP every process of node `name`: nothing on it writes or answers until `resume`
        (or until it is killed: a stopped process dies of SIGKILL all the same)."""
        self._signal(self.nodes[name], signal.SIGSTOP)

    def resume(self, name: str) -> None:
        """SIGCONT every process of node `name` (after `pause`)."""
        self._signal(self.nodes[name], signal.SIGCONT)

    def _signal(self, node: Node, sig: signal.Signals) -> None:
        node.remember()
        for pid, started in node.pids.items():
            if start_time(pid) == started:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass

    def kill(self, name: str) -> list[int]:
        """SIGKILL every process of node `name` at once (a machine dying); returns their pids."""
        node = self.nodes.pop(name)
        return self._kill(node)

    def _kill(self, node: Node) -> list[int]:
        node.remember()
        pids = sorted(pid for pid, started in node.pids.items() if start_time(pid) == started)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        node.proc.wait(timeout=30)
        return pids

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL to what is left of each tree); remove the folder."""
        for node in self.nodes.values():
            node.remember()
            try:
                os.killpg(node.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        while any(n.alive() for n in self.nodes.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
        for node in list(self.nodes.values()):
            self._kill(node)
        self.nodes.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def leftovers(self, pids: list[int]) -> list[int]:
        """Those of `pids` still running (zombies excluded)."""
        out = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                out.append(pid)
        return out
