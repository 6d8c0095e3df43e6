"""`orchestrate campaign`: run cells x seeds x repetitions under one label, then export.

    orchestrate campaign --label demo                     # the built-in default campaign
    orchestrate campaign --cells oracle:payment-run,null:payment-run --seeds 0,1 --reps 3 \\
        --concurrency 4 --label pilot
    orchestrate campaign --cells campaign.yaml --label pilot

Re-running the same command resumes the label: finished attempts are not run again.
"""
from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from orchestrator.campaign.identity import (
    DeclarationChanged,
    build_declaration,
    canonical_json,
    check_or_write_declaration,
    label_root,
    plan_attempts,
    sha256_bytes,
)
from orchestrator.campaign.limits import EngineLimits
from orchestrator.campaign.spec import DEFAULT_CELLS, CampaignSpec, CampaignSpecError, spec_from_args

EXIT_BAD_INPUT = 2
EXIT_INFRA = 3
EXIT_INTERRUPTED = 130


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
    p.add_argument("--backend", choices=["docker", "local"], help="where attempts run (default docker)")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.add_argument("--retries", type=int, help="retries of an attempt that ends infra_error (default 2)")
    p.set_defaults(func=run)


def default_label(spec: CampaignSpec) -> str:
    """A label derived from what the campaign is, so the same command resumes the same label."""
    key = canonical_json(
        {"cells": spec.cells, "seeds": spec.seeds, "reps": spec.reps, "timeout": spec.turn_timeout_s,
         "backend": spec.backend or "docker"}
    )
    return "campaign-" + sha256_bytes(key.encode())[:10]


def _runtime_config(label: str, runs_root: Path | None) -> Any:
    try:
        from orchestrator.config import RuntimeConfig
    except ImportError:
        return None
    overrides: dict[str, Any] = {"campaign": label}
    if runs_root is not None:
        overrides["runs_root"] = runs_root
    return RuntimeConfig.from_env(**overrides)


def _install_signals(stop: Callable[[], None], console: Console) -> Callable[[], None]:
    """First SIGINT/SIGTERM: stop scheduling and let attempts tear down; second: exit now."""
    hits = {"n": 0}

    def handler(signum: int, frame: Any) -> None:
        hits["n"] += 1
        if hits["n"] == 1:
            console.print(
                f"[yellow]{signal.Signals(signum).name}: no new attempts; waiting for attempts in flight "
                "to tear down (signal again to exit at once; `orchestrate reap` cleans up)[/yellow]"
            )
            stop()
        else:
            raise KeyboardInterrupt

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore


def run(args: argparse.Namespace) -> int:
    """Run (or resume) a campaign; exit 0 when every attempt has a final result."""
    from orchestrator.campaign import runtime
    from orchestrator.campaign.export import export_label
    from orchestrator.campaign.progress import CampaignProgress, summary_table
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
            label=args.label,
            concurrency=args.concurrency,
            backend=args.backend,
        )
        if args.retries is not None:
            if args.retries < 0:
                raise CampaignSpecError("--retries: must be >= 0")
            spec = spec.model_copy(update={"budgets": spec.budgets.model_copy(update={"infra_retries": args.retries})})
        label = spec.label or default_label(spec)
        backend = spec.backend or "docker"
        cells = spec.cell_refs
        tasks = runtime.task_info([c.task for c in cells])
        runtime.check_policies(cells)
        systems = runtime.systems_identity(cells, spec.systems)
    except CampaignSpecError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return EXIT_BAD_INPUT

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
        volatile={
            "concurrency": concurrency,
            "infra_retries": spec.budgets.infra_retries,
            "runs_root": str(runs_root),
            "argv": sys.argv[1:],
        },
    )
    root = label_root(runs_root, label)
    try:
        resuming = check_or_write_declaration(root, declaration)
    except DeclarationChanged as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return EXIT_BAD_INPUT
    console.print(
        f"campaign {label}: {len(cells)} cell(s) x seeds {spec.seeds} x {spec.reps} rep(s) = {len(plan)} attempts, "
        f"backend {backend}, concurrency {concurrency}" + (" (resuming)" if resuming else ""),
        highlight=False,
    )

    limits = EngineLimits.for_concurrency(concurrency)
    try:
        engine = runtime.make_backend(backend, config, limits)
        console.print(f"backend {backend}: preparing (reap what dead runs left; build missing images)")
        runtime.prepare_backend(engine)
        scenarios = runtime.ScenarioCache()
        for task, seed in sorted({(c.task, s) for c in cells for s in spec.seeds}):
            console.print(f"scenario {task} seed {seed}: ", end="", highlight=False)
            scenarios.get(task, seed)
            console.print("ready", highlight=False)
    except Exception as exc:  # nothing has run yet: say what is wrong and stop
        console.print(f"[red]error:[/red] cannot start the campaign: {type(exc).__name__}: {exc}", highlight=False)
        return EXIT_INFRA
    runner = runtime.make_runner(
        backend=engine,
        runs_root=runs_root,
        label=label,
        turn_timeout_s=spec.turn_timeout_s,
        systems_file=spec.systems,
        config=config,
        scenarios=scenarios,
    )
    progress = CampaignProgress(len(plan), label=label, concurrency=concurrency, console=console)
    scheduler = Scheduler(
        runs_root=runs_root,
        label=label,
        runner=runner,
        concurrency=concurrency,
        infra_retries=spec.budgets.infra_retries,
        on_event=progress.handle,
        fatal=(runtime.FatalCampaignError,),
    )
    restore = _install_signals(scheduler.stop, console)
    try:
        with progress:
            result = scheduler.run(plan, poll=progress.refresh)
    except runtime.FatalCampaignError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        export_label(runs_root, label)
        return EXIT_BAD_INPUT
    finally:
        restore()

    summary = export_label(runs_root, label)
    out.print(summary_table(summary))
    out.print(f"ledger: {root / 'attempts.jsonl'}\nsummary: {root / 'summary.json'}", highlight=False)
    if result.interrupted:
        console.print(f"[yellow]stopped: {result.not_started} attempt(s) not started; run the same command to finish[/yellow]")
        return EXIT_INTERRUPTED
    infra = sum(c["infra_errors"] for c in summary["cells"].values())
    if infra:
        console.print(
            f"[yellow]{infra} attempt(s) ended infra_error after {spec.budgets.infra_retries} retries "
            "(excluded from rates); run the same command to try them again[/yellow]"
        )
        return EXIT_INFRA
    return 0
