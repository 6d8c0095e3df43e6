"""Orchestration overhead of one attempt, docker vs local, beside the bare Docker operations.

    .venv/bin/python bench/attempt_overhead.py [--runs 3] [--turns 2] [--task payment-run]

For the null policy (its turns do nothing, so what is measured is the runtime itself) it runs
`--runs` rounds; each round runs one attempt on the local backend, one on the docker backend and
one sample of each bare Docker operation, so all three see the same load. Per attempt: open
(networks, volumes, the agent side's holder: network namespace without a default route, the
workspace's and the turns' quota volumes), services (ERP up and healthy, handbook copied),
per-turn agent start (create + copy-in + start of the turn's container), per-turn run and
cleanup, freeze (grading-date advance, flush, snapshot, workspace out) and teardown.

The docker backend runs as a campaign runs it: with `--warm-erp-slots` (default 1, the
campaign's) ERP slots made ahead (orchestrator/backends/docker/warm_pool.py: an attempt's two
networks and its ERP started in standby), each taken by one attempt; the first round's attempt
makes the pool (its own ERP starts cold). `--warm-erp-slots 0` measures every attempt cold. The
objects counted per attempt include what the pool made during it (one slot per attempt).

The Done-when figure of issue 20 is the docker attempt's overhead (total minus its turns' own
run time) over the bare Docker operations the attempt needs. "Needs" is counted, not guessed:
the bench counts the containers, networks and volumes the docker attempt really creates (the
backend's engine client, wrapped) and prices each at the bare operation measured in the same
round, through the same engine API (docker SDK):

    container  create + start + wait + remove of `true` (network none)
    network    create (internal bridge) + remove
    volume     create (tmpfs, like the quota volumes) + remove

The same ratio is printed a second time with the ERP's own application start added to the floor
(the local backend's services_s: what the ERP costs with no container at all), because that is
the app's cost, not Docker's.

By default the attempts run on a small built-in scenario (the test company of tests/); with
`--task SLUG` on that task pack's scenario at seed 0 (needs the task pack and the grader's
scenario cache). Grading is skipped: it is the same host code on both backends.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "support"))

KINDS = ("containers", "networks", "volumes")


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


class BareDocker:
    """One sample of each bare engine operation per call of `sample`, through the engine API."""

    def __init__(self, image: str) -> None:
        import docker

        self.client = docker.from_env(timeout=300)
        self.image = image
        from orchestrator import labels as L

        # The runtime's labels: a crashed bench leaves objects the reaper removes.
        self.labels = L.attempt_labels("bench", f"bench-bare-{uuid.uuid4().hex[:8]}", "bench", L.Owner.current())
        self.samples: dict[str, list[float]] = {"container": [], "network": [], "volume": [], "cli_run_rm": []}

    def sample(self) -> None:
        """Time one container run, one network pair, one volume pair and one `docker run --rm`."""
        t = time.monotonic()
        c = self.client.containers.create(self.image, entrypoint=["true"], command=[], network_mode="none",
                                          labels=self.labels)
        c.start()
        c.wait(timeout=300)
        c.remove(force=True)
        self.samples["container"].append(time.monotonic() - t)

        t = time.monotonic()
        net = self.client.networks.create(f"pb-bench-{uuid.uuid4().hex[:8]}", driver="bridge", internal=True,
                                          labels=self.labels)
        net.remove()
        self.samples["network"].append(time.monotonic() - t)

        t = time.monotonic()
        vol = self.client.volumes.create(f"pb-bench-{uuid.uuid4().hex[:8]}", driver="local", labels=self.labels,
                                         driver_opts={"type": "tmpfs", "device": "tmpfs", "o": "size=1048576"})
        vol.remove(force=True)
        self.samples["volume"].append(time.monotonic() - t)

        t = time.monotonic()  # the first figure was the CLI's; kept for comparison
        label_args = [a for k, v in self.labels.items() for a in ("--label", f"{k}={v}")]
        subprocess.run(["docker", "run", "--rm", *label_args, "--network", "none", "--entrypoint", "true", self.image],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.samples["cli_run_rm"].append(time.monotonic() - t)

    def medians(self) -> dict[str, float]:
        return {k: _median(v) for k, v in self.samples.items()}


def count_creations(client: Any) -> Counter[str]:
    """Wrap the engine client's create calls (at its low-level API: the high-level collections
    are made afresh on every access); the returned counter grows with every creation."""
    counts: Counter[str] = Counter()
    for kind, method in (("containers", "create_container"), ("networks", "create_network"),
                         ("volumes", "create_volume")):
        original: Callable[..., Any] = getattr(client.api, method)

        def counted(*args: Any, _kind: str = kind, _orig: Callable[..., Any] = original, **kwargs: Any) -> Any:
            counts[_kind] += 1
            return _orig(*args, **kwargs)

        setattr(client.api, method, counted)
    return counts


class BackendBench:
    """Null attempts on one backend."""

    def __init__(self, backend_name: str, images: Any, turns: int, task_slug: str | None, warm: int = 0) -> None:
        from orchestrator.backends import make_backend
        from orchestrator.config import Images, RuntimeConfig

        self.name, self.turns, self.task_slug = backend_name, turns, task_slug
        self.tmp = Path(tempfile.mkdtemp(prefix=f"pb-bench-{backend_name}-"))
        self.cfg = RuntimeConfig.from_env(runs_root=self.tmp / "runs", scratch_root=self.tmp / "scratch", campaign="bench",
                                          images=Images(erp=images.erp.tag, agent=images.agent.tag), warm_erp_slots=warm)
        self.backend = make_backend(backend_name, self.cfg)
        self.backend.ensure_prepared()  # reap + image lookup: once per orchestrator, not per attempt
        client = getattr(self.backend, "client", None)
        self.counts: Counter[str] | None = count_creations(client) if client is not None else None
        self.records: list[dict[str, Any]] = []
        self.created: list[dict[str, int]] = []

    def attempt(self, rep: int) -> None:
        from orchestrator.attempt import AttemptSpec, run_attempt
        from orchestrator.cells import Cell

        before = dict(self.counts or {})
        if self.task_slug:
            from orchestrator.inputs import load_inputs

            spec = AttemptSpec(Cell("null", self.task_slug), 0, rep=rep, label="bench")
            inputs = load_inputs(spec.cell, 0)
            task, scenario = inputs.task, inputs.scenario
        else:
            from runtime_support import fake_scenario

            scenario, task = fake_scenario(self.tmp / f"scenario-{rep}", turns=self.turns)
            spec = AttemptSpec(Cell("null", "fake"), 0, rep=rep, label="bench")
        result = run_attempt(spec, backend=self.backend, config=self.cfg, scenario=scenario, task=task, grade=False)
        if result.outcome != "graded":
            raise SystemExit(f"{self.name} attempt failed: {result.error}")
        self.records.append(result.record)
        if self.counts is not None:
            self.created.append({k: self.counts[k] - before.get(k, 0) for k in KINDS})


def summarise(records: list[dict[str, Any]]) -> dict[str, float]:
    """Median per-attempt figures (seconds)."""
    t = lambda key: _median([r["timings"].get(key, float("nan")) for r in records])  # noqa: E731
    turns = [x for r in records for x in r["turns"]]
    return {
        "open_s": t("open_s"),
        "services_s (erp start)": t("services_s"),
        "turn_agent_start_s": _median([x["start_overhead_s"] for x in turns]),
        "turn_run_s": _median([x["duration_s"] for x in turns]),
        "turn_cleanup_s": _median([x["cleanup_s"] for x in turns]),
        "turn_advance_s": _median([x["advance_s"] for x in turns]),
        "freeze_s": t("freeze_s"),
        "teardown_s": t("teardown_s"),
        "total_s": t("total_s"),
        # the Done-when's overhead: each attempt's total minus its own turns' run time
        "overhead_s": _median([r["timings"]["total_s"] - sum(x["duration_s"] for x in r["turns"]) for r in records]),
        "turns_per_attempt": _median([len(r["turns"]) for r in records]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="rounds: one attempt per backend + one bare sample each (default 3)")
    ap.add_argument("--turns", type=int, default=2, help="turns of the built-in scenario (default 2)")
    ap.add_argument("--task", help="use this task pack's scenario (seed 0) instead of the built-in one")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--warm-erp-slots", type=int, default=1,
                    help="docker: ERP slots made ahead (default 1, as a campaign; 0: every attempt cold)")
    args = ap.parse_args(argv)

    from orchestrator.images import ensure_images

    images = ensure_images()
    local = BackendBench("local", images, args.turns, args.task)
    dock = BackendBench("docker", images, args.turns, args.task, warm=args.warm_erp_slots)
    bare = BareDocker(images.agent.tag)
    try:
        bare.sample()  # warm-up (image layers, CLI): not counted
        bare.samples = {k: [] for k in bare.samples}
        for rep in range(args.runs):
            local.attempt(rep)
            dock.attempt(rep)
            bare.sample()
            print(f"round {rep + 1}/{args.runs}: docker {dock.records[-1]['timings']['total_s']:.2f} s, "
                  f"local {local.records[-1]['timings']['total_s']:.2f} s", flush=True)
    finally:
        pool = getattr(dock.backend, "warm_pool", None)
        warm_taken = pool.taken if pool is not None else 0
        getattr(dock.backend, "shutdown", list)()  # the untaken slot (docker)
        for runner in (local, dock):
            shutil.rmtree(runner.tmp, ignore_errors=True)

    d, lo, b = summarise(dock.records), summarise(local.records), bare.medians()
    print()
    print(f"attempt overhead, null policy, median of {args.runs} rounds "
          f"({'task ' + args.task if args.task else f'built-in scenario, {args.turns} turns'})")
    print(f"{'':24}{'docker':>10}{'local':>10}{'ratio':>8}")
    for key in d:
        dv, lv = d[key], lo[key]
        ratio = f"{dv / lv:8.2f}" if lv == lv and lv > 0 else f"{'-':>8}"
        print(f"{key:24}{dv:10.3f}{lv:10.3f}{ratio}")

    print()
    print("bare docker operations, same rounds (median, engine API):")
    print(f"  container create+start+wait+remove  {b['container']:.3f} s")
    print(f"  network create+remove               {b['network']:.3f} s")
    print(f"  volume create+remove                {b['volume']:.3f} s")
    print(f"  (docker run --rm via the CLI        {b['cli_run_rm']:.3f} s)")

    # Where the ERP's container sits decides its CPU share on a busy host (config.py service_cgroup_parent).
    print(f"  (service containers' cgroup parent: {getattr(dock.backend, 'service_cgroup_parent', None)!r}; "
          f"the bare containers': the engine's default)")

    created = {k: int(_median([c[k] for c in dock.created])) for k in KINDS}
    price = {"containers": b["container"], "networks": b["network"], "volumes": b["volume"]}
    floor = sum(created[k] * price[k] for k in KINDS)
    erp_app = lo["services_s (erp start)"]
    print()
    print("objects per docker attempt (counted at the engine client, a warm slot's included): "
          + ", ".join(f"{created[k]} {k}" for k in KINDS))
    print(f"  warm ERP slots: {args.warm_erp_slots}; attempts that took one: {warm_taken} of {args.runs}")
    print("  floor = " + " + ".join(f"{created[k]} x {price[k]:.3f}" for k in KINDS) + f" = {floor:.2f} s")
    overhead = d["overhead_s"]
    print(f"docker overhead per attempt (total - its turns' run time):   {overhead:.2f} s")
    print()
    print(f"issue 20's ratio, overhead / bare Docker floor:               {overhead / floor:.2f}  (its goal <= 1.5)")
    print(f"  same, floor + the ERP's own app start (local services_s {erp_app:.2f} s; "
          f"the app's cost, not Docker's): {overhead / (floor + erp_app):.2f}")
    print(f"  informative: (docker overhead - local overhead {lo['overhead_s']:.2f} s) / floor: "
          f"{(overhead - lo['overhead_s']) / floor:.2f}")
    per_turn = d["turn_agent_start_s"] + d["turn_cleanup_s"]
    print(f"per-turn agent container (start + cleanup) / 1 bare container: "
          f"{per_turn / b['container']:.2f}")
    print(f"Done-when (issue 42): docker/local total per attempt: {d['total_s'] / lo['total_s']:.2f}  (goal <= 1.5)")
    if args.json:
        args.json.write_text(json.dumps({"docker": d, "local": lo, "bare": b, "created": created, "floor_s": floor,
                                         "ratio": overhead / floor, "ratio_with_erp_app": overhead / (floor + erp_app),
                                         "docker_records": [r["timings"] for r in dock.records]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
