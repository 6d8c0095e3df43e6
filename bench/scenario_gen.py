"""Scenario generation time: the Northgate company alone, then payment-run's generator per seed.

    .venv/bin/python bench/scenario_gen.py [--seeds 0 1 2] [--task payment-run]
    .venv/bin/python bench/scenario_gen.py --seeds 0 --backlog-bands   # ap-invoice-backlog per band

Each generator runs in a fresh subprocess (as the scenario cache runs it), so the figures
include interpreter start and imports. Prints wall and CPU seconds and the size of the written
scenario.db; nothing is asserted. CPU seconds are the steadier figure on a shared machine.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

COMPANY_ONLY = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from tasks.northgate.build import build_northgate
ng, erp = build_northgate(Path({path!r}), {seed}, history_end="2026-10-07", last_order="2026-07-29")
ng.builder.finish()
print(erp.requests)
"""


def _run(argv: list[str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--task", default="payment-run")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
