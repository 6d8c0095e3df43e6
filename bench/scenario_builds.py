"""The release gate's scenario builds: every pack × seed through the scenario cache, as `validate`
builds them (generator subprocess on the shared history cache, then the oracle's reference run on
the local backend), `--jobs` at once.

    .venv/bin/python bench/scenario_builds.py --tasks all --seeds 0,1,2,3,4 --jobs 1
    .venv/bin/python bench/scenario_builds.py --tasks margin-bridge --seeds 0 --cache /tmp/cold

Uses the cache PB_SCENARIO_CACHE names (or `--cache`): point it at an empty folder for cold
figures. Prints each build's wall seconds (in the order they finish), the total wall time, the
CPU seconds of this process and its children, and per pack and seed-0 the scenario database's
canonical hash and the oracle's (the reference run's) canonical hash, so a change that must
not move them can be checked before/after.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    """Build the scenarios and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="all")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cache", type=Path, help="scenario cache folder (default: PB_SCENARIO_CACHE)")
    args = ap.parse_args(argv)
    if args.cache:
        os.environ["PB_SCENARIO_CACHE"] = str(args.cache.resolve())
    from erp_service.canonical import canonical_hash
    from orchestrator.scenarios.cache import ensure_scenario
    from tasks.registry import list_tasks

    tasks = list_tasks() if args.tasks == "all" else args.tasks.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    plan = [(t, s) for t in tasks for s in seeds]
    t0, cpu0 = time.monotonic(), _cpu()
    built = {}

    def one(task: str, seed: int):
        start = time.monotonic()
        return task, seed, ensure_scenario(task, seed), time.monotonic() - start

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for fut in as_completed([pool.submit(one, t, s) for t, s in plan]):
            task, seed, scen, wall = fut.result()
            built[(task, seed)] = scen
            print(f"{task} seed {seed}: {wall:.1f} s", flush=True)
    wall, cpu = time.monotonic() - t0, _cpu() - cpu0
    print(f"{len(plan)} scenario(s) in {wall:.0f} s wall ({wall / max(1, len(plan)):.1f} s each), "
          f"{cpu:.0f} s CPU, {args.jobs} at once")
    for task in tasks:
        if (task, seeds[0]) in built:
            scen = built[(task, seeds[0])]
            oracle = json.loads((scen.dir / "oracle-run" / "oracle.json").read_text()).get("canonical_db", "") \
                if (scen.dir / "oracle-run" / "oracle.json").is_file() else "(none)"
            print(f"  {task} seed {seeds[0]}: scenario {canonical_hash(scen.dir / 'scenario.db')[:16]} "
                  f"oracle {oracle[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
