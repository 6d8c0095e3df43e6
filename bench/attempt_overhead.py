"""Orchestration overhead of one attempt, docker vs local, beside the bare Docker operations.

    .venv/bin/python bench/attempt_overhead.py [--runs 3] [--turns 2] [--task payment-run]

For the null policy (its turns do nothing, so what is measured is the runtime itself) it runs
`--runs` attempts on each backend and reports, per attempt: setup (networks, volumes, ERP up and
healthy, handbook copied), per-turn agent start (create + copy-in + start of the turn's
container), per-turn run and cleanup, finalize (grading-date advance, flush, snapshot, workspace
out) and teardown. Beside it, measured in the same run: `docker run --rm <agent image> true` and
a `docker network create` + `rm`, through the docker CLI. Then the docker/local ratios.

By default the attempts run on a small built-in scenario (the test company of tests/); with
`--task SLUG` on that task pack's scenario at seed 0 (needs the task pack and the grader's
scenario cache). Grading is skipped: it is the same host code on both backends.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "support"))


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _timed(argv: list[str]) -> float:
    t = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def bare_docker(agent_image: str, runs: int) -> dict[str, float]:
    """Median seconds of `docker run --rm IMAGE true` and of a network create + remove."""
    label = f"pb.owner.bench={uuid.uuid4().hex[:6]}"
    run_s = [_timed(["docker", "run", "--rm", "--label", label, "--network", "none", "--entrypoint", "true", agent_image]) for _ in range(runs)]
    net_s = []
    for _ in range(runs):
        name = f"pb-bench-{uuid.uuid4().hex[:8]}"
        t = time.monotonic()
        subprocess.run(["docker", "network", "create", "--internal", "--label", label, name], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["docker", "network", "rm", name], check=True, stdout=subprocess.DEVNULL)
        net_s.append(time.monotonic() - t)
    return {"docker_run_rm_s": _median(run_s), "network_create_rm_s": _median(net_s)}


def attempts(backend_name: str, runs: int, turns: int, task_slug: str | None, images) -> list[dict]:
    """Run `runs` null attempts; return their result records."""
    from orchestrator.attempt import AttemptSpec, run_attempt
    from orchestrator.backends import make_backend
    from orchestrator.cells import Cell
    from orchestrator.config import Images, RuntimeConfig

    tmp = Path(tempfile.mkdtemp(prefix="pb-bench-"))
    cfg = RuntimeConfig.from_env(runs_root=tmp / "runs", scratch_root=tmp / "scratch", campaign="bench",
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag) if images else Images())
    backend = make_backend(backend_name, cfg)
    backend.ensure_prepared()  # reap + image lookup: once per orchestrator, not per attempt
    records = []
    for rep in range(runs):
        if task_slug:
            from orchestrator.inputs import load_inputs

            spec = AttemptSpec(Cell("null", task_slug), 0, rep=rep, label="bench")
            inputs = load_inputs(spec.cell, 0)
            result = run_attempt(spec, backend=backend, config=cfg, task=inputs.task, scenario=inputs.scenario, grade=False)
        else:
            from runtime_support import fake_scenario

            scenario, task = fake_scenario(tmp / f"scenario-{backend_name}-{rep}", turns=turns)
            spec = AttemptSpec(Cell("null", "fake"), 0, rep=rep, label="bench")
            result = run_attempt(spec, backend=backend, config=cfg, scenario=scenario, task=task, grade=False)
        if result.outcome != "graded":
            raise SystemExit(f"{backend_name} attempt failed: {result.error}")
        records.append(result.record)
    return records


def summarise(records: list[dict]) -> dict[str, float]:
    """Median per-attempt figures (seconds)."""
    t = lambda key: _median([r["timings"].get(key, float("nan")) for r in records])  # noqa: E731
    turns = [x for r in records for x in r["turns"]]
    return {
        "open_s (networks+volumes)": t("open_s"),
        "services_s (erp start)": t("services_s"),
        "turn_agent_start_s": _median([x["start_overhead_s"] for x in turns]),
        "turn_run_s": _median([x["duration_s"] for x in turns]),
        "turn_cleanup_s": _median([x["cleanup_s"] for x in turns]),
        "turn_advance_s": _median([x["advance_s"] for x in turns]),
        "freeze_s": t("freeze_s"),
        "teardown_s": t("teardown_s"),
        "total_s": t("total_s"),
        "turns_per_attempt": _median([len(r["turns"]) for r in records]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="attempts per backend (default 3)")
    ap.add_argument("--turns", type=int, default=2, help="turns of the built-in scenario (default 2)")
    ap.add_argument("--task", help="use this task pack's scenario (seed 0) instead of the built-in one")
    args = ap.parse_args(argv)

    from orchestrator.images import ensure_images

    images = ensure_images()
    local = summarise(attempts("local", args.runs, args.turns, args.task, images))
    dock = summarise(attempts("docker", args.runs, args.turns, args.task, images))
    bare = bare_docker(images.agent.tag, max(3, args.runs))

    print(f"attempt overhead, null policy, median of {args.runs} attempts per backend "
          f"({'task ' + args.task if args.task else f'built-in scenario, {args.turns} turns'})")
    print(f"{'':24}{'docker':>10}{'local':>10}{'ratio':>8}")
    for key in dock:
        d, l = dock[key], local[key]
        ratio = f"{d / l:8.1f}" if l and l == l and l > 0 else f"{'-':>8}"
        print(f"{key:24}{d:10.3f}{l:10.3f}{ratio}")
    print()
    print("bare docker operations (median, docker CLI):")
    print(f"  docker run --rm {images.agent.tag} true   {bare['docker_run_rm_s']:.3f} s")
    print(f"  docker network create + rm          {bare['network_create_rm_s']:.3f} s")
    print()
    per_turn = dock["turn_agent_start_s"] + dock["turn_cleanup_s"]
    print(f"per-turn agent container (start + cleanup) / bare docker run --rm: {per_turn / bare['docker_run_rm_s']:.2f}")
    print(f"networks+volumes / (2 x bare network create+rm):                   {dock['  networks+volumes_s'] / (2 * bare['network_create_rm_s']):.2f}")
    print(f"docker/local total per attempt:                                    {dock['total_s'] / local['total_s']:.2f}")
    overhead = dock["total_s"] - dock["turns_per_attempt"] * dock["turn_run_s"]
    print(f"docker orchestration overhead per attempt (total - turn run time): {overhead:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
