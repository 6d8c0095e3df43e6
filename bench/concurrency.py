"""How many attempts one host holds at once: a "slow agent" campaign at rising concurrency.

    .venv/bin/python bench/concurrency.py [--levels 16,32,48,64,96,160] [--sleep 40] [--task payment-run]

The slow agent is a command system (written to a temporary systems file): each turn makes a few
ERP reads, sleeps `--sleep` seconds as if waiting for its model, and makes a few more reads;
the task's two turns. Each level runs `level` such attempts at concurrency `level`, no retries,
through the same scheduler, runtime and docker backend as `orchestrate campaign`, with the
host-wide start slots (`RuntimeConfig.start_slots`, PB_START_SLOTS) the runtime uses. Printed
per level: attempts finished, infra errors, time to first turn (campaign start → the attempt's
first turn phase, median and max), the most attempts in their turns at the same moment, time
queued for start slots (median), peak memory per attempt (cgroup peaks, see
campaign_throughput.py, which count the page cache too), resident memory per attempt (anonymous
and shared pages: issue 42's figure) and the host's load average (peak of 1-minute samples).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

SYSTEM = "slow-agent"


def systems_file(folder: Path, sleep_s: float, reads: int) -> Path:
    """A systems file declaring the slow agent (reads, a sleep, reads; a usage file)."""
    read = "; ".join(["erp whoami >/dev/null", "erp inbox >/dev/null"] * max(1, reads // 2))
    script = f"set -eu; {read}; sleep {sleep_s:g}; {read}; printf '{{\"requests\": 0}}\\n' > \"$1/agent-usage.json\""
    path = folder / "systems.yaml"
    path.write_text(json.dumps({"systems": {SYSTEM: {
        "description": "ERP reads, a sleep as if waiting for a model, ERP reads",
        "argv": ["sh", "-c", script, SYSTEM, "{out_dir}"],
        "usage": "usage-file",
    }}}, indent=2))  # JSON is YAML
    return path


class LoadSampler(threading.Thread):
    """The host's 1-minute load average, sampled every few seconds; keeps the peak."""

    def __init__(self, interval_s: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.interval_s, self.peak, self._halt = interval_s, 0.0, threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.peak = max(self.peak, os.getloadavg()[0])
            self._halt.wait(self.interval_s)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)


STAT_FILES = [  # a container's memory.stat: cgroup v1 (cgroupfs: under docker/, or at the root for
    # the service containers, config.service_cgroup_parent "/"; systemd), then v2
    "/sys/fs/cgroup/memory/docker/{id}/memory.stat", "/sys/fs/cgroup/memory/{id}/memory.stat",
    "/sys/fs/cgroup/memory/system.slice/docker-{id}.scope/memory.stat",
    "/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.stat", "/sys/fs/cgroup/docker/{id}/memory.stat",
]


def read_resident(container_id: str) -> int | None:
    """A container's resident memory now: anonymous pages (v1 `rss`, v2 `anon`) and shared memory
    (`shmem`: tmpfs, the quota volumes' pages a turn wrote). Not the page cache, which the kernel
    reclaims under pressure (the cgroup peak counts it: the file pages Python read)."""
    for pattern in STAT_FILES:
        try:
            text = Path(pattern.format(id=container_id)).read_text()
        except OSError:
            continue
        stat = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
        return int(stat.get("rss", stat.get("anon", 0))) + int(stat.get("shmem", 0))
    return None


class ResidentSampler(threading.Thread):
    """Each campaign container's largest resident memory seen (`read_resident`), by attempt and role."""

    def __init__(self, client, campaign: str, interval_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.client, self.campaign, self.interval_s = client, campaign, interval_s
        self.peaks: dict[str, int] = {}
        self.attempt_of: dict[str, str] = {}
        self.role_of: dict[str, str] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                containers = self.client.api.containers(filters={"label": f"pb.campaign={self.campaign}"})
            except Exception:  # noqa: BLE001 — the engine is busy; sample again
                containers = []
            for c in containers:
                value = read_resident(c["Id"])
                if value is None:
                    continue
                self.peaks[c["Id"]] = max(self.peaks.get(c["Id"], 0), value)
                labels = c.get("Labels") or {}
                self.attempt_of[c["Id"]], self.role_of[c["Id"]] = labels.get("pb.attempt", "?"), labels.get("pb.role", "?")
            self._halt.wait(self.interval_s)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)

    def per_attempt(self) -> list[int]:
        """Per attempt, the sum over roles of the role's largest resident peak (sorted)."""
        by: dict[str, dict[str, int]] = {}
        for cid, peak in self.peaks.items():
            roles = by.setdefault(self.attempt_of[cid], {})
            roles[self.role_of[cid]] = max(roles.get(self.role_of[cid], 0), peak)
        return sorted(sum(r.values()) for r in by.values())


def _ts(line: dict) -> float:
    return dt.datetime.fromisoformat(line["ts"].replace("Z", "+00:00")).timestamp()


def turn_windows(runs_root: Path, label: str) -> dict[str, tuple[float, float]]:
    """attempt folder -> (first turn phase start, last turn phase end) in wall time."""
    out = {}
    for log in (runs_root / label).glob("*/seed-*/rep-*/logs/runtime.jsonl"):
        start = end = None
        for raw in log.read_text().splitlines():
            line = json.loads(raw)
            if line.get("phase") != "turn":
                continue
            if line.get("event") == "phase_start" and start is None:
                start = _ts(line)
            elif line.get("event") in ("phase_end", "phase_failed"):
                end = _ts(line)
        if start is not None and end is not None:
            out[str(log.parents[1])] = (start, end)
    return out


def most_at_once(windows: list[tuple[float, float]]) -> int:
    """The largest number of windows open at one moment."""
    events = sorted([(s, 1) for s, _ in windows] + [(e, -1) for _, e in windows], key=lambda x: (x[0], x[1]))
    best = now = 0
    for _, d in events:
        now += d
        best = max(best, now)
    return best


def run_level(level: int, task: str, systems: Path, runs_root: Path, scenarios, client) -> dict:
    from campaign_throughput import MemorySampler

    from orchestrator.attempt.inputs import task_info
    from orchestrator.campaign import runtime
    from orchestrator.campaign.declaration import plan_attempts
    from orchestrator.campaign.limits import EngineLimits
    from orchestrator.campaign.scheduler import Scheduler
    from orchestrator.cells import Cell
    from orchestrator.commands.stop_signals import install_stop_signals
    from orchestrator.config import RuntimeConfig

    label = f"bench-conc{level}-{int(time.time())}"
    config = RuntimeConfig.from_env(campaign=label, runs_root=runs_root)
    limits = EngineLimits.for_concurrency(level)
    backend = runtime.limited_backend("docker", config, limits)
    runtime.prepare_backend(backend)
    version = task_info([task])[task]["version"]
    plan = plan_attempts([Cell(SYSTEM, task)], [0], level, {task: version})
    runner = runtime.make_job(backend=backend, runs_root=runs_root, label=label, turn_timeout_s=None,
                                 systems_file=str(systems), config=config, scenarios=scenarios)
    finished: list = []
    sched = Scheduler(runs_root=runs_root, label=label, job=runner, concurrency=level, infra_retries=0,
                      on_event=lambda e: finished.append(e) if e.kind == "finished" else None,
                      fatal=(runtime.FatalCampaignError,))
    memory, load = MemorySampler(client, label, interval_s=0.5), LoadSampler()
    resident = ResidentSampler(client, label)
    memory.start()
    resident.start()
    load.start()
    t0_wall, t0 = time.time(), time.monotonic()
    # Ctrl-C / SIGTERM: the attempts in flight cancel and tear down (as in `orchestrate campaign`).
    restore = install_stop_signals(sched.stop, lambda m: print(m, flush=True))
    try:
        sched.run(plan)
    finally:
        restore()
    wall = time.monotonic() - t0
    memory.stop()
    resident.stop()
    load.stop()
    windows = turn_windows(runs_root, label)
    first_turn = sorted(s - t0_wall for s, _ in windows.values())
    queued = []
    # Outcomes from the results: an attempt cancelled by a stop (Ctrl-C) is an infra error whose
    # error kind is "interrupted"; it is counted apart, and every other failure's cause is kept.
    interrupted, causes = 0, Counter[str]()
    for result in (runs_root / label).glob("*/seed-*/rep-*/result.json"):
        record = json.loads(result.read_text())
        queued.append(float(record.get("timings", {}).get("services_queued_s", 0.0)))
        error = record.get("error") or {}
        if error.get("kind") == "interrupted":
            interrupted += 1
        elif record.get("outcome") != "graded":
            causes[f"{record.get('outcome')} in {error.get('phase')}: {str(error.get('message'))[:160]}"] += 1
    mem = sorted(memory.per_attempt_simultaneous().values())
    by_role: dict[str, list[int]] = {}
    for cid, peak in memory.peaks.items():
        by_role.setdefault(memory.role_of[cid], []).append(peak)
    return {
        "level": level, "attempts": len(finished), "start_slots": config.start_slots,
        "graded": sum(1 for e in finished if e.outcome == "graded"),
        "infra_errors": sum(1 for e in finished if e.outcome == "infra_error") - interrupted,
        "interrupted": interrupted, "causes": dict(causes.most_common()),
        "wall_s": wall,
        "first_turn_med_s": statistics.median(first_turn) if first_turn else None,
        "first_turn_max_s": first_turn[-1] if first_turn else None,
        "in_turns_at_once": most_at_once(list(windows.values())),
        "queued_med_s": statistics.median(queued) if queued else None,
        "mem_med_mib": statistics.median(mem) / 2**20 if mem else None,
        "mem_max_mib": mem[-1] / 2**20 if mem else None,
        "load_peak": load.peak,
        "mem_by_role_med_mib": {role: statistics.median(p) / 2**20 for role, p in sorted(by_role.items())},
        "resident_med_mib": statistics.median(res) / 2**20 if (res := resident.per_attempt()) else None,
        "resident_max_mib": res[-1] / 2**20 if res else None,
    }


def _f(v: float | None, fmt: str = ".0f") -> str:
    return "-" if v is None else format(v, fmt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="16,32,48,64,96,160", help="concurrent attempts per level")
    parser.add_argument("--sleep", type=float, default=40.0, help="seconds each turn waits 'for its model'")
    parser.add_argument("--reads", type=int, default=4, help="ERP reads before and after the sleep")
    parser.add_argument("--task", default="payment-run")
    parser.add_argument("--keep", action="store_true", help="keep the runs folder (printed)")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    if not levels or min(levels) < 1:
        parser.error("--levels: positive integers, comma-separated")

    import docker

    from orchestrator.campaign import runtime

    client = docker.from_env(version="1.41")
    tmp = Path(tempfile.mkdtemp(prefix="pb-bench-conc-"))
    systems = systems_file(tmp, args.sleep, args.reads)
    scenarios = runtime.ScenarioCache()
    print(f"warming up: scenario {args.task} seed 0 ...", flush=True)
    scenarios.get(args.task, 0)
    rows = []
    for level in levels:
        print(f"{level} slow-agent attempts at concurrency {level} ...", flush=True)
        rows.append(run_level(level, args.task, systems, tmp / "runs", scenarios, client))
        r = rows[-1]
        print(f"  {r['graded']}/{r['attempts']} graded, {r['infra_errors']} infra errors, "
              f"{r['interrupted']} interrupted, {r['wall_s']:.0f}s, {r['in_turns_at_once']} in their turns at once",
              flush=True)
        for cause, n in r["causes"].items():
            print(f"    {n} x {cause}", flush=True)
        if r["interrupted"]:
            break   # stopped: no further level

    print()
    print(f"slow agent ({args.reads} reads, {args.sleep:g}s sleep, {args.reads} reads; per turn), {args.task}, docker, "
          f"{os.cpu_count()} cores, start slots {rows[0]['start_slots'] if rows else '-'}")
    print(f"{'level':>5} {'done':>5} {'infra':>5} {'intr':>4} {'wall s':>7} {'1st turn med/max s':>18} {'in turns':>8} "
          f"{'queued med s':>12} {'mem/att MiB med/max':>19} {'resident/att MiB med/max':>24} {'load peak':>9}")
    for r in rows:
        print(f"{r['level']:>5} {r['attempts']:>5} {r['infra_errors']:>5} {r['interrupted']:>4} {r['wall_s']:>7.0f} "
              f"{_f(r['first_turn_med_s']) + '/' + _f(r['first_turn_max_s']):>18} {r['in_turns_at_once']:>8} "
              f"{_f(r['queued_med_s'], '.1f'):>12} {_f(r['mem_med_mib']) + '/' + _f(r['mem_max_mib']):>19} "
              f"{_f(r['resident_med_mib']) + '/' + _f(r['resident_max_mib']):>24} "
              f"{r['load_peak']:>9.1f}")
    print("mem/att: per role the largest cgroup peak (memory.max_usage_in_bytes: resident memory and page cache "
          "charged to it), summed: the ERP, the agent side's holder and one agent turn, resident together")
    print("resident/att (issue 42's figure, goal <= 100 MiB): the same sum of each role's largest resident memory "
          "(anonymous + shared pages, memory.stat; no page cache, which the kernel reclaims), sampled every 0.5 s")
    for r in rows:
        print(f"  level {r['level']}: median peak per container by role (MiB): "
              + ", ".join(f"{role} {mib:.0f}" for role, mib in r["mem_by_role_med_mib"].items()))
    if args.keep or any(r["causes"] for r in rows):
        print(f"runs kept in {tmp}" + ("" if args.keep else " (an attempt was not graded)"))
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(r["infra_errors"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
