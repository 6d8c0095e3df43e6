"""`orchestrate campaign`: run cells x seeds x repetitions under one label, then export.

    orchestrate campaign --label demo                     # the built-in default campaign
    orchestrate campaign --cells oracle:payment-run,null:payment-run --seeds 0,1 --reps 3 \\
        --concurrency 4 --label pilot
    orchestrate campaign --cells campaign.yaml --label pilot
    orchestrate campaign --cells ... --executor ray --ray-address HEAD:6379   # on a Ray cluster (README)

Re-running the same command resumes the label: finished attempts are not run again.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from orchestrator.campaign.declaration import (
    CampaignDeclaration,
    DeclarationChanged,
    build_declaration,
    check_or_write_declaration,
    declaration_changes,
    load_declaration,
    plan_attempts,
)
from orchestrator.campaign.executor import Executor
from orchestrator.campaign.executor_local import LocalExecutor
from orchestrator.campaign.limits import EngineLimits
from orchestrator.campaign.sources import label_sources
from orchestrator.campaign.spec import (
    DEFAULT_CELLS,
    MAX_INFRA_RETRIES,
    CampaignSpec,
    CampaignSpecError,
    spec_from_args,
)
from orchestrator.commands.preflight import check_inputs
from orchestrator.commands.stop_signals import install_stop_signals
from orchestrator.exit_codes import ExitCode, Failure, failure_for
from orchestrator.hashing import canonical_json, sha256_bytes


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `campaign` subcommand."""
    p = sub.add_parser(
        "campaign",
        help="run a campaign (cells x seeds x repetitions) and write its ledger and summary",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--cells",
        help="comma list of SYSTEM:TASK[+CONDITION], or a campaign YAML file "
        f"(default: the built-in campaign {','.join(DEFAULT_CELLS)}, seed 0, 1 rep)",
    )
    p.add_argument("--seeds", help="comma list of seeds, or a range a-b (default 0)")
    p.add_argument("--reps", type=int, help="repetitions per cell and seed (default 1)")
    p.add_argument("--concurrency", type=int, help="attempts in flight (default 1)")
    p.add_argument("--label", help="campaign label: runs/<label>/ (default: derived from the declaration)")
    p.add_argument("--timeout", type=float, help="override every turn budget, seconds (declared in the record)")
    p.add_argument("--systems", help="systems file defining command systems")
    p.add_argument("--model-access", help="model access file (upstream, key source, models, budget) for "
                   "systems that call a model, e.g. agent_sandbox/examples/model-access.yaml")
    p.add_argument("--backend", choices=["docker", "local"], help="where attempts run (default docker)")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.add_argument("--retries", type=int,
                   help=f"retries of an attempt that ends infra_error (default 2, at most {MAX_INFRA_RETRIES})")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: attempts run on this host (default); ray: each attempt is a Ray task on a node "
                   "that advertises docker_slots (needs the `ray` extra and --ray-address)")
    p.add_argument("--ray-address", default=os.environ.get("RAY_ADDRESS"),
                   help="the Ray cluster's head, HOST:PORT (default: $RAY_ADDRESS)")
    p.set_defaults(func=run)


def default_label(spec: CampaignSpec) -> str:
    """A label derived from what the campaign is, so the same command resumes the same label."""
    key = canonical_json(
        {"cells": spec.cells, "seeds": spec.seeds, "reps": spec.reps, "timeout": spec.turn_timeout_s,
         "backend": spec.backend or "docker"}
    )
    return "campaign-" + sha256_bytes(key.encode())[:10]


def _runtime_config(label: str, runs_root: Path | None) -> Any:
    from orchestrator.config import RuntimeConfig

    overrides: dict[str, Any] = {"campaign": label}
    if runs_root is not None:
        overrides["runs_root"] = runs_root
    return RuntimeConfig.from_env(**overrides)


def say(console: Console, text: str, style: str = "", *, prefix: str = "") -> None:
    """Print one message as plain text: rich markup in it (`[@n]`, `[x]`) is never interpreted."""
    line = Text(prefix, style="red") + Text(text, style=style) if prefix else Text(text, style=style)
    console.print(line, highlight=False)


def error(console: Console, text: str, failure: Failure = Failure.BAD_INPUT) -> None:
    """`orchestrate campaign: <class>: <text>` on stderr (docs/exit-codes.md), text verbatim."""
    say(console, text, prefix=f"orchestrate campaign: {failure.value}: ")


def run(args: argparse.Namespace) -> int:
    """Run (or resume) a campaign; exit 0 when every attempt has a final result.

    Order: every input is checked (preflight) → the label's stored declaration is compared →
    the engine is prepared and every scenario (with the oracle's reference projections) is built
    → only then is campaign.json written and the first attempt started.
    """
    from orchestrator.campaign import runtime
    from orchestrator.campaign.export import export_label
    from orchestrator.campaign.progress import CampaignProgress, comparisons_table, summary_table
    from orchestrator.campaign.scheduler import Scheduler

    console = Console(stderr=True, soft_wrap=True)  # messages stay whole lines (greppable)
    out = Console()
    if not out.is_terminal:  # a pipe or a log file: room for the whole table
        out = Console(width=160)
    try:
        spec = spec_from_args(
            args.cells,
            seeds=args.seeds,
            reps=args.reps,
            timeout=args.timeout,
            systems=args.systems,
            model_access=args.model_access,
            label=args.label,
            concurrency=args.concurrency,
            backend=args.backend,
            retries=args.retries,
        )
        label = spec.label or default_label(spec)
        backend = spec.backend or "docker"
        executor_name = getattr(args, "executor", None) or "local"
        if executor_name == "ray" and not getattr(args, "ray_address", None):
            raise CampaignSpecError("--executor ray needs --ray-address HOST:PORT (or RAY_ADDRESS)")
        cells = spec.cell_refs
        checked = check_inputs(cells, systems_file=spec.systems, label=label, turn_timeout_s=spec.turn_timeout_s,
                               model_access=spec.model_access)
    except CampaignSpecError as exc:
        error(console, str(exc))
        return ExitCode.BAD_INPUT
    tasks, systems = checked.tasks, checked.systems

    config = _runtime_config(label, args.runs_root)
    runs_root = Path(args.runs_root or (config.runs_root if config is not None else "runs")).resolve()
    plan = plan_attempts(cells, spec.seeds, spec.reps, {k: v["version"] for k, v in tasks.items()})
    concurrency = spec.concurrency or 1
    declaration = build_declaration(
        label=label,
        cells=cells,
        seeds=spec.seeds,
        reps=spec.reps,
        task_info=tasks,
        systems=systems,
        turn_timeout_s=spec.turn_timeout_s,
        backend=backend,
        sources=label_sources(),  # a resume after a change of the ERP, grader, company generator or images is refused
        volatile={
            "concurrency": concurrency,
            "infra_retries": spec.budgets.infra_retries,
            "runs_root": str(runs_root),
            "argv": sys.argv[1:],
            # Where attempts run does not change what they are: a label resumes under either.
            "executor": executor_name,
        },
    )
    root = runs_root / label
    try:  # a label holding another campaign is refused before anything is prepared
        old = load_declaration(root)
        changes = declaration_changes(old.to_json(), declaration.to_json()) if old is not None else []
        if changes:
            check_or_write_declaration(root, declaration)  # raises, naming every change
    except DeclarationChanged as exc:
        error(console, str(exc))
        return ExitCode.BAD_INPUT
    say(
        console,
        f"campaign {label}: {len(cells)} cell(s) x seeds {spec.seeds} x {spec.reps} rep(s) = {len(plan)} attempts, "
        f"backend {backend}, "
        + (f"executor ray at {args.ray_address}, concurrency {spec.concurrency or 'the cluster slots'}"
           if executor_name == "ray" else f"concurrency {concurrency}")
        + (" (resuming)" if old is not None else ""),
    )

    from orchestrator.leftovers import sweep_cache

    for gone in sweep_cache(config):  # temporary folders of killed runs (never a live one's)
        say(console, f"removed {gone} (left by a killed run)")
    limits = EngineLimits.for_concurrency(concurrency)
    executor: Executor | None = None
    try:
        if executor_name == "local":
            engine = runtime.limited_backend(backend, config, limits)
            say(console, f"backend {backend}: preparing (reap what dead runs left; build missing images)")
            runtime.prepare_backend(engine)
        scenarios = runtime.ScenarioCache()
        for task, seed in sorted({(c.task, s) for c in cells for s in spec.seeds}):
            say(console, f"scenario {task} seed {seed}: building (with the oracle's reference projections)")
            scenarios.get(task, seed)
        if executor_name == "ray":  # the nodes prepare their own engines (reap, images by content hash)
            executor = _ray_executor(args.ray_address, label, backend, declaration, spec, scenarios, cells, console)
            executor.prepare()
            if spec.concurrency is None:  # as many attempts in flight as the cluster has Docker slots
                concurrency = max(1, getattr(executor, "slots", 1))
                declaration.volatile["concurrency"] = concurrency
    except Exception as exc:  # noqa: BLE001 — nothing has run yet: say what is wrong and stop
        if executor is not None:
            executor.close()
        ending = failure_for(exc)  # a ScenarioError (the pack's code failed) is a task error
        error(console, f"cannot start the campaign: {ending.message}", ending.failure)
        return ending.code
    try:
        check_or_write_declaration(root, declaration)  # now, and only now, the label is declared
    except DeclarationChanged as exc:  # another orchestrator declared it meanwhile
        error(console, str(exc))
        return ExitCode.BAD_INPUT
    if executor is None:
        executor = LocalExecutor(runtime.make_runner(
            backend=engine,
            runs_root=runs_root,
            label=label,
            turn_timeout_s=spec.turn_timeout_s,
            systems_file=spec.systems,
            config=config,
            scenarios=scenarios,
            model_access=spec.model_access,
        ))
    progress = CampaignProgress(len(plan), label=label, concurrency=concurrency, console=console)
    scheduler = Scheduler(
        runs_root=runs_root,
        label=label,
        runner=executor,
        concurrency=concurrency,
        infra_retries=spec.budgets.infra_retries,
        on_event=progress.handle,
        fatal=(runtime.FatalCampaignError,),
    )
    restore = install_stop_signals(scheduler.stop, lambda m: console.print(Text(m, style="yellow")))
    try:
        with progress:
            result = scheduler.run(plan, poll=progress.refresh)
    except runtime.FatalCampaignError as exc:
        error(console, str(exc))
        export_label(runs_root, label)
        return ExitCode.BAD_INPUT
    finally:
        restore()
        executor.close()

    summary = export_label(runs_root, label)
    out.print(summary_table(summary))
    if (paired := comparisons_table(summary)) is not None:
        out.print(paired)
    say(out, f"ledger: {root / 'attempts.jsonl'}\nsummary: {root / 'summary.json'}")
    return _final_code(console, summary, result, spec.budgets.infra_retries, stopped=scheduler.stopping)


def _ray_executor(address: str, label: str, backend: str, declaration: CampaignDeclaration, spec: CampaignSpec,
                  scenarios: Any, cells: list[Any], console: Console) -> Executor:
    """The Ray executor for this campaign: the declaration's sources and tasks, the built scenarios,
    and (docker backend) the head's engine for the sweep after a lost node, when the head has one."""
    from orchestrator.campaign.executor_ray import RayExecutor

    engine = None
    if backend == "docker":
        try:
            import docker

            engine = docker.from_env(version="1.41")
            engine.ping()
        except Exception:  # noqa: BLE001 — a head without an engine: each node's own reap cleans up
            engine = None
    built = {(c.task, s): scenarios.get(c.task, s) for c in cells for s in spec.seeds}
    return RayExecutor(
        address=address, label=label, backend=backend, sources=declaration.sources or {}, tasks=declaration.tasks,
        scenarios=built, turn_timeout_s=spec.turn_timeout_s, systems_file=spec.systems,
        model_access=spec.model_access, engine=engine, log=lambda text: say(console, text),
    )


def _final_code(console: Console, summary: dict[str, Any], result: Any, retries: int, *, stopped: bool) -> int:
    """The campaign's exit code from what its attempts ended as (docs/exit-codes.md).

    After a stop (SIGINT/SIGTERM), attempts that were in flight end infra_error ("cancelled")
    and are not retried: they are reported as interrupted, and the same command runs them again.
    """
    cells = summary["cells"].values()
    if stopped:
        cut = sum(1 for e in result.events if e.kind == "finished" and e.outcome == "infra_error")
        say(console, f"interrupted: {cut} attempt(s) in flight were cancelled and torn down, "
            f"{result.not_started} not started; run the same command to finish", "yellow")
        return ExitCode.INTERRUPTED
    task_errors = sum(int(c.get("task_errors", 0) or 0) for c in cells)
    if task_errors:
        say(console, f"{task_errors} attempt(s) ended task_error: the task pack failed (see their result.json); "
            "fix the pack, then run again", "yellow")
        return Failure.TASK_ERROR.code
    infra = sum(c["infra_errors"] for c in cells)
    if infra:
        say(console, f"{infra} attempt(s) ended infra_error after {retries} retries "
            "(excluded from rates); run the same command to try them again", "yellow")
        return ExitCode.INFRA
    return ExitCode.OK
