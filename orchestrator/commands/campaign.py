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
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from orchestrator.campaign.declaration import DeclarationChanged
from orchestrator.campaign.spec import DEFAULT_CELLS, MAX_INFRA_RETRIES, spec_from_args
from orchestrator.commands.stop_signals import install_stop_signals
from orchestrator.errors import ConfigError
from orchestrator.exit_codes import ExitCode, Failure, failure_for


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
    p.add_argument("--declared", type=Path, metavar="STUDY",
                   help="a study declaration (`orchestrate declare`): refuse to run anything that differs from it")
    p.add_argument("--seed-secret", type=Path, metavar="FILE",
                   help="with --declared: the secret of the study's sealed seeds (checked against its commitment)")
    p.set_defaults(func=run)


def say(console: Console, text: str, style: str = "", *, prefix: str = "") -> None:
    """Print one message as plain text: rich markup in it (`[@n]`, `[x]`) is never interpreted."""
    line = Text(prefix, style="red") + Text(text, style=style) if prefix else Text(text, style=style)
    console.print(line, highlight=False)


def error(console: Console, text: str, failure: Failure = Failure.BAD_INPUT) -> None:
    """`orchestrate campaign: <class>: <text>` on stderr (docs/exit-codes.md), text verbatim."""
    say(console, text, prefix=f"orchestrate campaign: {failure.value}: ")


def run(args: argparse.Namespace) -> int:
    """Run (or resume) a campaign; exit 0 when every attempt has a final result.

    The phases are `orchestrator.campaign.lifecycle.Campaign`'s: check (every input; the label's
    stored declaration compared) → prepare (the engine, every scenario with the oracle's reference
    projections) → declare (only then is campaign.json written) → run → export. This command shows
    their progress and maps how they ended to an exit code (docs/exit-codes.md).
    """
    from orchestrator.campaign.lifecycle import Campaign
    from orchestrator.campaign.progress import CampaignProgress, comparisons_table, summary_table
    from orchestrator.campaign.runtime import FatalCampaignError

    console = Console(stderr=True, soft_wrap=True)  # messages stay whole lines (greppable)
    out = Console()
    if not out.is_terminal:  # a pipe or a log file: room for the whole table
        out = Console(width=160)
    try:
        spec = spec_from_args(
            args.cells, seeds=args.seeds, reps=args.reps, timeout=args.timeout, systems=args.systems,
            model_access=args.model_access, label=args.label, concurrency=args.concurrency,
            backend=args.backend, retries=args.retries,
        )
        declared = None
        if getattr(args, "declared", None) is not None:
            from orchestrator.campaign.declared import DeclaredStudy

            declared = DeclaredStudy(args.declared, getattr(args, "seed_secret", None))
            from_file = bool(args.cells) and Path(args.cells).is_file()
            spec = spec.model_copy(update={"seeds": declared.seeds(
                None if args.seeds is None and not from_file else spec.seeds)})
        elif getattr(args, "seed_secret", None) is not None:
            raise ConfigError("--seed-secret needs --declared STUDY (the declaration holds the commitment)")
        campaign = Campaign(spec, runs_root=args.runs_root, executor=getattr(args, "executor", None) or "local",
                            ray_address=getattr(args, "ray_address", None), say=lambda text: say(console, text),
                            declared=declared)
        campaign.check()
    except (ConfigError, DeclarationChanged, ValueError) as exc:  # ValueError: a study or secret file
        error(console, str(exc))
        return ExitCode.BAD_INPUT
    say(
        console,
        f"campaign {campaign.label}: {len(campaign.cells)} cell(s) x seeds {spec.seeds} x {spec.reps} rep(s) = "
        f"{len(campaign.plan)} attempts, backend {campaign.backend}, "
        + (f"executor ray at {campaign.ray_address}, concurrency {spec.concurrency or 'the cluster slots'}"
           if campaign.executor_name == "ray" else f"concurrency {campaign.concurrency}")
        + (" (resuming)" if campaign.resuming else ""),
    )
    try:
        campaign.prepare()
    except Exception as exc:  # noqa: BLE001 — nothing has run yet: say what is wrong and stop
        ending = failure_for(exc)  # a ScenarioError (the pack's code failed) is a task error
        error(console, f"cannot start the campaign: {ending.message}", ending.failure)
        return ending.code
    try:
        campaign.declare()
    except DeclarationChanged as exc:  # another orchestrator declared it meanwhile
        error(console, str(exc))
        return ExitCode.BAD_INPUT
    progress = CampaignProgress(len(campaign.plan), label=campaign.label, concurrency=campaign.concurrency,
                                console=console)
    restore = install_stop_signals(campaign.stop, lambda m: console.print(Text(m, style="yellow")))
    try:
        with progress:
            result = campaign.run(on_event=progress.handle, poll=progress.refresh)
    except FatalCampaignError as exc:
        error(console, str(exc))
        campaign.export()
        return ExitCode.BAD_INPUT
    finally:
        restore()

    summary = campaign.export()
    out.print(summary_table(summary))
    if (paired := comparisons_table(summary)) is not None:
        out.print(paired)
    budget = summary.get("cost_budget")
    if isinstance(budget, dict) and budget.get("stopped"):  # orchestrator/model_limits.py
        say(out, f"cost budget: {budget.get('reason')}", "yellow")
    say(out, f"ledger: {campaign.root / 'attempts.jsonl'}\nsummary: {campaign.root / 'summary.json'}")
    return _final_code(console, summary, result, spec.budgets.infra_retries, stopped=campaign.stopping)


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
