"""Scenario generation time: the Northgate company alone, then payment-run's generator per seed,
then the shared history cache (tasks/northgate/history_cache.py): a fresh seed against a second
pack on an already built seed.

    .venv/bin/python bench/scenario_gen.py [--seeds 0 1 2] [--task payment-run]
    .venv/bin/python bench/scenario_gen.py --seeds 0 --backlog-bands   # ap-invoice-backlog per band

Each generator runs in a fresh subprocess (as the scenario cache runs it), so the figures
include interpreter start and imports. Prints wall and CPU seconds and the size of the written
scenario.db. CPU seconds are the steadier figure on a shared machine.

The history part (issue 20's Done-when: a second pack on an already built seed costs <= 2 s),
for the first of --seeds, with an empty cache of its own: `--task` generated fresh (history
built and stored), `--task` again (history restored: the pack's own part) and `--second-pack`
(another pack on the same history window, restored). A fresh seed's history costs the fresh
generation minus the restored one. The fresh and restored scenarios must be the same bytes:
the bench compares them file by file and fails if they differ.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COMPANY_ONLY = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from tasks.northgate.build import build_northgate
ng, erp = build_northgate(Path({path!r}), {seed}, history_end="2026-10-07", last_order="2026-07-29")
ng.builder.finish()
print(erp.requests)
"""


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout.strip()


#: ap-invoice-backlog at the clerical, analyst and controller bands (the band is the generator's input).
BACKLOG_BANDS = ["ap-invoice-backlog-clerical", "ap-invoice-backlog", "ap-invoice-backlog-controller"]


def _documents(out: Path) -> str:
    """`  N documents` when the scenario's truth counts its documents (the backlog's does)."""
    import json

    facts = json.loads((out / "truth.json").read_text()).get("facts", {})
    return f"  {facts['documents']} documents" if "documents" in facts else ""


def _differences(a: Path, b: Path) -> list[str]:
    """Files that differ (or exist on one side only) between two scenario folders, recursively."""
    cmp = filecmp.dircmp(a, b)
    out: list[str] = []

    def walk(c: filecmp.dircmp, prefix: str) -> None:
        out.extend(f"{prefix}{n} (one side only)" for n in c.left_only + c.right_only)
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        out.extend(f"{prefix}{n}" for n in mismatch + errors)
        for name, sub in c.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(cmp, "")
    return out


def history_cache_figures(task: str, second: str, seed: int, tmp: Path) -> None:
    """Print a fresh seed's history cost and a second pack's cost on the already built seed."""
    from tasks.northgate.history_cache import CACHE_ENV, KEY_ENV

    cache = tmp / "history-cache"
    env = {**os.environ, CACHE_ENV: str(cache), KEY_ENV: f"bench-{os.getpid()}", "PYTHONHASHSEED": "0"}
    env.pop("PB_GENERATE_PARENT", None)

    def generate(slug: str, out: Path) -> tuple[float, float, int]:
        wall, cpu, _ = _run([sys.executable, "-m", "tasks.generate", "--task", slug, "--seed", str(seed),
                             "--out", str(out)], env=env)
        return wall, cpu, len([p for p in cache.iterdir() if not p.name.startswith(".")]) if cache.exists() else 0

    fresh, again, other = tmp / f"hc-{task}-fresh", tmp / f"hc-{task}-cached", tmp / f"hc-{second}-cached"
    f_wall, f_cpu, entries = generate(task, fresh)
    a_wall, a_cpu, entries_a = generate(task, again)
    s_wall, s_cpu, entries_s = generate(second, other)
    print()
    print(f"shared history cache, seed {seed} (an empty cache of its own):")
    print(f"  {task} fresh (history built, stored):  {f_wall:6.1f} s wall {f_cpu:6.1f} s cpu  ({entries} entry)")
    print(f"  {task} again (history restored):       {a_wall:6.1f} s wall {a_cpu:6.1f} s cpu")
    print(f"  {second} (restored, second pack):      {s_wall:6.1f} s wall {s_cpu:6.1f} s cpu"
          + ("" if entries_s == entries_a else "  (built its own history: not the same window)"))
    print(f"a fresh seed's history: {f_wall - a_wall:6.1f} s wall {f_cpu - a_cpu:6.1f} s cpu (fresh - restored)")
    print(f"Done-when: a second pack on an already built seed: {s_cpu:.2f} s cpu, {s_wall:.2f} s wall (goal <= 2 s)")
    diff = _differences(fresh, again)
    print(f"fresh vs restored {task} seed {seed}: " + ("identical, byte for byte" if not diff else f"DIFFER: {diff}"))
    if diff:
        raise SystemExit(f"the history cache changed {task} seed {seed}'s scenario: {diff}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--task", default="payment-run")
    parser.add_argument("--second-pack", default="payment-run-need-to-know",
                        help="a pack on --task's history window, generated second from the cache")
    parser.add_argument("--no-history-cache", action="store_true", help="skip the history cache figures")
    parser.add_argument("--backlog-bands", action="store_true",
                        help="generate ap-invoice-backlog at each difficulty band (its clerical and controller "
                             "variants and the analyst pack) instead of --task")
    args = parser.parse_args(argv)
    tasks = BACKLOG_BANDS if args.backlog_bands else [args.task]
    py = sys.executable
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory(prefix="bench-scen-") as tmp:
        db = Path(tmp) / "company.db"
        wall, cpu, requests = _run([py, "-c", COMPANY_ONLY.format(repo=str(REPO), path=str(db), seed=args.seeds[0])])
        print(f"company build (seed {args.seeds[0]}): {wall:6.1f} s wall {cpu:6.1f} s cpu  "
              f"{db.stat().st_size / 1e6:5.2f} MB  {requests} requests")
        for task in tasks:
            for seed in args.seeds:
                out = Path(tmp) / f"{task}-{seed}"
                wall, cpu, _ = _run([py, "-m", "tasks.generate", "--task", task, "--seed", str(seed), "--out", str(out)])
                size = (out / "scenario.db").stat().st_size
                print(f"{task} seed {seed}:        {wall:6.1f} s wall {cpu:6.1f} s cpu  {size / 1e6:5.2f} MB"
                      + _documents(out))
        if not args.no_history_cache and not args.backlog_bands:
            history_cache_figures(args.task, args.second_pack, args.seeds[0], Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
