"""Campaign throughput on this machine: oracle attempts per hour at concurrency 1, 2, 4 and 8,
and the peak memory of one attempt (the sum of its containers' memory peaks).

    .venv/bin/python bench/campaign_throughput.py [--levels 1,2,4,8] [--waves W | --attempts N]

Each level runs its own small campaign (oracle on the task, seed 0, N repetitions; by default
N = W x concurrency with W = 2 waves, at least 2; --waves 1 for a quick run) through the same
scheduler, runtime and docker backend as `orchestrate campaign`, in a temporary runs root. While it runs, a sampler reads every container
of the campaign (found by its `pb.campaign` label) from the memory cgroup: `memory.peak`
(cgroup v2) or `memory.max_usage_in_bytes` (v1), the kernel's own high-water mark, so short
peaks between samples are not lost; a container that ends between two samples is missed (the
count of containers seen is printed beside the figure). Images and the scenario are built
before the first timed level, so the levels time attempts only.

With `--ray`, each level also runs the same campaign through a Ray cluster on this machine (a
head and two worker nodes whose Docker slots add up to the level's concurrency, started by
tests/support/ray_cluster.py and stopped after): the Ray row gives its attempts per hour and the
ratio to the local row at the same concurrency, i.e. the executor's own overhead (task dispatch,
shipping the attempt folder back; on one host the nodes share the engine and the CPU).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CGROUP_FILES = [
    "/sys/fs/cgroup/memory/docker/{id}/memory.max_usage_in_bytes",  # v1, cgroupfs driver
    "/sys/fs/cgroup/memory/system.slice/docker-{id}.scope/memory.max_usage_in_bytes",  # v1, systemd
    "/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.peak",  # v2, systemd
    "/sys/fs/cgroup/docker/{id}/memory.peak",  # v2, cgroupfs
]


def read_peak(container_id: str) -> int | None:
    """The kernel's memory high-water mark of a running container, in bytes."""
    for pattern in CGROUP_FILES:
        try:
            return int(Path(pattern.format(id=container_id)).read_text().strip())
        except (OSError, ValueError):
            continue
    return None


class MemorySampler(threading.Thread):
    """Polls the campaign's containers and keeps each one's peak, grouped by attempt."""

    def __init__(self, client, campaign: str, interval_s: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.client, self.campaign, self.interval_s = client, campaign, interval_s
        self.peaks: dict[str, int] = {}  # container id -> peak bytes
        self.attempt_of: dict[str, str] = {}  # container id -> pb.attempt
        self.role_of: dict[str, str] = {}  # container id -> pb.role
        self.stats_fallback = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                containers = self.client.api.containers(filters={"label": f"pb.campaign={self.campaign}"})
            except Exception:  # the engine is busy; sample again
                containers = []
            for c in containers:
                cid = c["Id"]
                peak = read_peak(cid)
                if peak is None:  # no cgroup file visible: ask the engine (slower)
                    try:
                        stats = self.client.api.stats(cid, stream=False)
                        peak = int(stats.get("memory_stats", {}).get("max_usage") or stats.get("memory_stats", {}).get("usage") or 0)
                        self.stats_fallback += 1
                    except Exception:
                        continue
                self.peaks[cid] = max(self.peaks.get(cid, 0), peak)
                self.attempt_of[cid] = (c.get("Labels") or {}).get("pb.attempt", "?")
                self.role_of[cid] = (c.get("Labels") or {}).get("pb.role", "?")
            self._halt.wait(self.interval_s)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)

    def per_attempt(self) -> dict[str, int]:
        """Sum of the peaks of every container of each attempt (turn containers one after another)."""
        out: dict[str, int] = defaultdict(int)
        for cid, peak in self.peaks.items():
            out[self.attempt_of[cid]] += peak
        return dict(out)

    def per_attempt_simultaneous(self) -> dict[str, int]:
        """Per attempt, the sum over roles of the largest peak of that role: the containers that
        can run at the same time (ERP beside one agent turn), so an estimate of resident peak."""
        by: dict[str, dict[str, int]] = defaultdict(dict)
        for cid, peak in self.peaks.items():
            roles = by[self.attempt_of[cid]]
            role = self.role_of[cid]
            roles[role] = max(roles.get(role, 0), peak)
        return {a: sum(r.values()) for a, r in by.items()}


def ray_executor(address: str, label: str, task: str, scenarios):
    """A Ray executor for the bench's campaign (the label's sources and task as the command declares them)."""
    import docker

    from orchestrator.attempt.inputs import task_info
    from orchestrator.campaign.executor_ray import RayExecutor
    from orchestrator.campaign.sources import label_sources

    return RayExecutor(address=address, label=label, backend="docker", sources=label_sources(),
                       tasks=task_info([task]), scenarios={(task, 0): scenarios.get(task, 0)},
                       turn_timeout_s=None, engine=docker.from_env(version="1.41"))


def run_level(concurrency: int, attempts: int, task: str, runs_root: Path, scenarios, client,
              ray_address: str | None = None) -> dict:
    from orchestrator.attempt.inputs import task_info
    from orchestrator.campaign import runtime
    from orchestrator.campaign.declaration import plan_attempts
    from orchestrator.campaign.limits import EngineLimits
    from orchestrator.campaign.scheduler import Scheduler
    from orchestrator.cells import Cell
    from orchestrator.config import RuntimeConfig

    label = f"bench-{'ray-' if ray_address else ''}c{concurrency}-{int(time.time())}"
    config = RuntimeConfig.from_env(campaign=label, runs_root=runs_root)
    limits = EngineLimits.for_concurrency(concurrency)
    backend = runtime.limited_backend("docker", config, limits)
    runtime.prepare_backend(backend)
    version = task_info([task])[task]["version"]
    plan = plan_attempts([Cell("oracle", task)], [0], attempts, {task: version})
    runner = runtime.make_job(backend=backend, runs_root=runs_root, label=label, turn_timeout_s=None,
                                 systems_file=None, config=config, scenarios=scenarios)
    executor = None
    if ray_address is not None:  # the same attempts, each a Ray task on a node of the cluster
        executor = ray_executor(ray_address, label, task, scenarios)
        executor.prepare()
    outcomes: list = []
    sched = Scheduler(runs_root=runs_root, label=label, job=executor or runner, concurrency=concurrency, infra_retries=0,
                      on_event=lambda e: outcomes.append(e) if e.kind == "finished" else None,
                      fatal=(runtime.FatalCampaignError,))
    sampler = MemorySampler(client, label)
    sampler.start()
    t0 = time.monotonic()
    try:
        sched.run(plan)
    finally:
        if executor is not None:
            executor.close()
    wall = time.monotonic() - t0
    sampler.stop()
    per_attempt = sorted(sampler.per_attempt().values())
    simultaneous = sorted(sampler.per_attempt_simultaneous().values())
    return {
        "executor": "ray" if ray_address else "local",
        "concurrency": concurrency,
        "attempts": len(outcomes),
        "passed": sum(1 for e in outcomes if e.passed),
        "infra_errors": sum(1 for e in outcomes if e.outcome == "infra_error"),
        "wall_s": wall,
        "per_hour": 3600 * len(outcomes) / wall if wall > 0 else 0.0,
        "attempt_s_median": statistics.median(e.duration_s for e in outcomes) if outcomes else None,
        "mem_median_mib": statistics.median(per_attempt) / 2**20 if per_attempt else None,
        "mem_max_mib": per_attempt[-1] / 2**20 if per_attempt else None,
        "sim_median_mib": statistics.median(simultaneous) / 2**20 if simultaneous else None,
        "containers_seen": len(sampler.peaks),
        "setup_wait_s": limits.waited_s["setup"],
        "teardown_wait_s": limits.waited_s["teardown"],
    }


def ray_level(concurrency: int, attempts: int, task: str, runs_root: Path, scenarios, client) -> dict:
    """The level through a Ray cluster on this machine: two workers, slots adding up to `concurrency`."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    from ray_cluster import LocalRayCluster

    slots = {"wa": concurrency - concurrency // 2, "wb": concurrency // 2}
    cluster = LocalRayCluster({k: v for k, v in slots.items() if v}).start()
    try:
        row = run_level(concurrency, attempts, task, runs_root, scenarios, client, ray_address=cluster.address)
    finally:
        cluster.stop()
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,2,4,8", help="concurrency levels (default 1,2,4,8)")
    parser.add_argument("--attempts", type=int, help="attempts per level (default: --waves x concurrency, at least 2)")
    parser.add_argument("--waves", type=int, default=2, help="full waves of attempts per level (default 2)")
    parser.add_argument("--task", default="payment-run")
    parser.add_argument("--keep", action="store_true", help="keep the runs folder (printed)")
    parser.add_argument("--ray", action="store_true",
                        help="also run each level through a Ray cluster on this machine (needs the ray extra)")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",") if x.strip()]

    import docker

    from orchestrator.campaign import runtime

    client = docker.from_env(version="1.41")
    tmp = Path(tempfile.mkdtemp(prefix="pb-bench-"))
    scenarios = runtime.ScenarioCache()
    print(f"warming up: images and scenario {args.task} seed 0 ...", flush=True)
    scenarios.get(args.task, 0)
    rows = []
    for c in levels:
        n = args.attempts or max(2, args.waves * c)
        print(f"concurrency {c}: {n} oracle attempts ...", flush=True)
        rows.append(run_level(c, n, args.task, tmp / "runs", scenarios, client))
        r = rows[-1]
        print(f"  {r['per_hour']:.0f} attempts/hour ({r['attempts']} in {r['wall_s']:.1f}s, {r['passed']} passed, "
              f"{r['infra_errors']} infra errors)", flush=True)
        if args.ray:
            rows.append(ray_level(c, n, args.task, tmp / "runs", scenarios, client))
            r = rows[-1]
            r["ratio"] = r["per_hour"] / rows[-2]["per_hour"] if rows[-2]["per_hour"] else 0.0
            print(f"  ray: {r['per_hour']:.0f} attempts/hour ({r['attempts']} in {r['wall_s']:.1f}s, {r['passed']} passed, "
                  f"{r['infra_errors']} infra errors), {r['ratio']:.2f} of local", flush=True)

    print()
    print(f"campaign throughput, oracle:{args.task}, docker backend, {len(levels)} levels, this machine")
    print(f"{'exec':>5} {'conc':>4} {'attempts':>8} {'passed':>6} {'infra':>5} {'wall s':>8} {'att/hour':>9} {'att med s':>9} "
          f"{'mem/att MiB (med/max)':>22} {'at once MiB':>11} {'containers':>10} {'setup wait s':>12} {'vs local':>8}")
    for r in rows:
        mem = "-" if r["mem_median_mib"] is None else f"{r['mem_median_mib']:.0f}/{r['mem_max_mib']:.0f}"
        sim = "-" if r["sim_median_mib"] is None else f"{r['sim_median_mib']:.0f}"
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else "-"
        print(f"{r['executor']:>5} {r['concurrency']:>4} {r['attempts']:>8} {r['passed']:>6} {r['infra_errors']:>5} {r['wall_s']:>8.1f} "
              f"{r['per_hour']:>9.0f} {r['attempt_s_median'] or 0:>9.1f} {mem:>22} {sim:>11} {r['containers_seen']:>10} "
              f"{r['setup_wait_s']:>12.1f} {ratio:>8}")
    print("mem/att: sum over the attempt's containers (ERP, helpers, one agent per turn) of each cgroup's peak;\n"
          "at once: per role the largest peak, summed (ERP beside one agent turn: what is resident together);\n"
          "containers sampled every 0.1 s" + ("; vs local: the Ray row's attempts/hour over the local row's at the "
                                              "same concurrency (the executor's overhead)" if args.ray else ""))
    if args.keep:
        print(f"runs kept in {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(r["infra_errors"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
