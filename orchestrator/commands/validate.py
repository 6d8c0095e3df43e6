"""`orchestrate validate`: the §11 task-validation controls, as a matrix.

    orchestrate validate --tasks payment-run,payment-run-need-to-know --seeds 0,1,2,3,4 --strict
    orchestrate validate --tasks payment-run --seeds 0,1,2,3,4 --strict --faults lost-writes

Per task × seed: two oracle runs pass every check with the same canonical hash, null fails, each
negative control fails every check it targets; under --faults the fault plan hits the oracle and
the profile's own controls fail; each oracle's final database is probed for disclosures of every
restricted class (a finding is a false positive of disclose_restricted: a problem under --strict,
counted per task in the report); the handbook is checked and linted. Exit status (docs/exit-codes.md): 0 all controls hold, 1 a
problem was found, 2 bad input, 3 engine unavailable or the infrastructure failed, 130 stopped by
SIGINT/SIGTERM (attempts in flight cancelled and torn down, the rest not run).
"""
from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds must be comma-separated integers, got {text!r}") from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"--seeds needs distinct non-negative integers, got {text!r}")
    return seeds


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `validate` subcommand."""
    p = sub.add_parser("validate", help="run the task-validation controls (§11)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", required=True, help="comma-separated task slugs, or 'all'")
    p.add_argument("--seeds", type=_seeds, default=[0], help="comma-separated seeds (default 0)")
    p.add_argument("--strict", action="store_true",
                   help="also flag a control whose failures are all outside its targets, and any "
                        "disclosure the probe finds in an oracle's final database")
    p.add_argument("--faults", metavar="PROFILE",
                   help="validate under a fault profile of the task(s); all: clean and every profile each declares")
    p.add_argument("--backend", choices=["docker", "local"], default="docker")
    p.add_argument("--runs-root", type=Path, help="keep the attempt records here (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the attempt records even when all is well")
    p.add_argument("--concurrency", type=int, default=2, metavar="N",
                   help="attempts of one seed run at once (default 2)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the tasks, then the engine, then run the validation matrix."""
    from orchestrator.commands.stop_signals import install_stop_signals
    from orchestrator.exit_codes import ExitCode, check_engine
    from orchestrator.validate import print_report, run_validation
    from tasks.packs import PackError
    from tasks.registry import list_tasks, load_task

    tasks = list_tasks() if args.tasks == "all" else [t.strip() for t in args.tasks.split(",") if t.strip()]
    if not tasks:
        print("orchestrate validate: bad_input: no tasks given", file=sys.stderr)
        return ExitCode.BAD_INPUT
    for t in tasks:
        try:
            load_task(t)
        except PackError as exc:
            print(f"orchestrate validate: bad_input: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
    if args.backend == "docker":
        check_engine(has_local_backend=True)
    cancel = threading.Event()
    restore = install_stop_signals(cancel.set, lambda m: print(f"orchestrate validate: {m}", file=sys.stderr, flush=True))
    try:
        rep = run_validation(tasks, args.seeds, strict=args.strict, faults=args.faults, backend=args.backend,
                             runs_root=args.runs_root.resolve() if args.runs_root else None, keep=args.keep,
                             concurrency=max(1, args.concurrency), cancel=cancel)
    finally:
        restore()
    print_report(rep)
    if rep.interrupted:
        return ExitCode.INTERRUPTED
    return ExitCode.OK if rep.ok else ExitCode.NEGATIVE
