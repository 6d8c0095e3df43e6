"""`orchestrate attempt SYSTEM:TASK[+CONDITION] --seed N`: run one attempt, print its verdict.

    orchestrate attempt null:payment-run --seed 0
    orchestrate attempt oracle:payment-run+lost-writes --seed 1 --rep 2 --label dev
    orchestrate attempt my-agent:payment-run --seed 0 --systems systems.yaml --backend local

Exit status (docs/exit-codes.md): 0 graded (pass or fail: see the verdict), 1 agent_error,
2 bad input (refused before anything was prepared), 3 infra_error or engine unavailable,
4 task_error, 130 interrupted.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.exit_codes import ExitCode, Failure

if TYPE_CHECKING:
    from orchestrator.attempt import AttemptSpec
    from orchestrator.config import RuntimeConfig

# The attempt's outcome (result.json) to the command's exit code.
EXIT = {
    "graded": ExitCode.OK,
    "agent_error": Failure.AGENT_ERROR.code,
    "infra_error": Failure.INFRA_ERROR.code,
    "task_error": Failure.TASK_ERROR.code,
}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `attempt` subcommand."""
    p = sub.add_parser("attempt", help="run one attempt and print its verdict", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cell", help="SYSTEM:TASK[+CONDITION], e.g. null:payment-run")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--rep", type=int, default=1,
                   help="repetition number, counted from 1 as campaigns do (default 1)")
    p.add_argument("--label", default="adhoc", help="runs/<label>/ (default adhoc)")
    p.add_argument("--backend", choices=["docker", "local"], default="docker",
                   help="docker (isolated, default) or local (host processes, isolation: none)")
    p.add_argument("--systems", type=Path, help="systems file declaring command systems")
    p.add_argument("--model-access", type=Path, help="model access file for systems that call a model")
    p.add_argument("--timeout", type=float, help="override every turn's budget, seconds")
    p.add_argument("--runs-root", type=Path, help="where labels live (default: runs/ of the repo)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the lifecycle to stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check every input, then run the attempt; print outcome, verdict and folder."""
    from orchestrator.attempt import AttemptSpec
    from orchestrator.attempt.inputs import check_inputs
    from orchestrator.backends import make_backend
    from orchestrator.cells import CellError, parse_cell
    from orchestrator.config import RuntimeConfig
    from orchestrator.errors import ConfigError
    from orchestrator.exit_codes import check_engine
    from orchestrator.logs import configure_console

    configure_console(args.verbose)  # rich on stderr; the attempt's own log is logs/runtime.jsonl
    try:
        cell = parse_cell(args.cell)
        if args.seed < 0 or args.rep < 1:
            raise ConfigError("--seed must be >= 0 and --rep >= 1")
        systems_file = args.systems.resolve() if args.systems else None
        model_access = args.model_access.resolve() if args.model_access else None
        # The same checks as `campaign` (label, budget, pack + lint, condition, systems).
        check_inputs([cell],
                     systems_file=str(systems_file) if systems_file else None,
                     label=args.label, turn_timeout_s=args.timeout,
                     model_access=str(model_access) if model_access else None)
    except (CellError, ConfigError) as exc:
        print(f"orchestrate attempt: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.backend == "docker":
        check_engine(has_local_backend=True)  # EngineUnavailable: one line and exit 3 (orchestrator.cli)
    overrides: dict[str, object] = {"campaign": args.label}
    if args.runs_root:
        overrides["runs_root"] = args.runs_root.resolve()
    config = RuntimeConfig.from_env(**overrides)
    from orchestrator.leftovers import sweep_cache

    for gone in sweep_cache(config):  # temporary folders of killed runs (never a live one's)
        print(f"removed {gone} (left by a killed run)", file=sys.stderr)
    backend = make_backend(args.backend, config)
    spec = AttemptSpec(cell=cell, seed=args.seed, rep=args.rep, label=args.label,
                       timeout_override_s=args.timeout, systems_file=systems_file, model_access=model_access)
    result = run_one_attempt("attempt", spec, backend, config)
    if isinstance(result, int):
        return result
    rec = result.record
    if rec["outcome"] == "graded":
        verdict = ("PASS" if rec["passed"] else "FAIL") if rec.get("graded") else "UNGRADED (no grader)"
        if rec.get("breach"):
            verdict += " (breach)"
    else:
        verdict = "not scored"
    print(f"outcome:  {rec['outcome']}")
    print(f"verdict:  {verdict}")
    if rec.get("checks"):
        failed = [c.get("name") for c in rec["checks"] if not c.get("passed")]
        shown = f"; failed: {', '.join(map(str, failed))}" if failed else ""
        print(f"checks:   {len(rec['checks']) - len(failed)}/{len(rec['checks'])} passed{shown}")
    for t in rec.get("turns", []):
        late = " TIMED OUT" if t["timed_out"] else ""
        print(f"turn {t['n']}:   {t['date']} exit {t['exit_code']}{late} in {t['duration_s']:.1f}s")
    if rec.get("error"):
        err = rec["error"]
        print(f"error:    [{err.get('phase')}] {err.get('exception', err.get('kind'))}: {err.get('message')}")
    print(f"isolation: {rec['isolation']}   total {rec['timings'].get('total_s', 0):.1f}s")
    print(f"folder:   {result.paths.root}")
    return EXIT.get(rec["outcome"], ExitCode.INFRA)


def run_one_attempt(command: str, spec: AttemptSpec, backend: Any, config: RuntimeConfig) -> Any:
    """Run one attempt through the door (`orchestrator.attempt.run_cell`) for `orchestrate
    <command>`; the attempt's result, or the exit code of a task error, bad input or an interrupt
    (said on stderr)."""
    from orchestrator.attempt import run_cell, sigterm_as_interrupt
    from orchestrator.errors import ConfigError, TaskError
    from orchestrator.scenarios.cache import ensure_scenario

    try:
        with sigterm_as_interrupt():
            return run_cell(spec, backend=backend, config=config, scenario_for=ensure_scenario)
    except TaskError as exc:
        print(f"orchestrate {command}: task_error: {exc}", file=sys.stderr)
        return EXIT["task_error"]
    except ConfigError as exc:
        print(f"orchestrate {command}: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        print(f"orchestrate {command}: interrupted: everything of the attempt was removed", file=sys.stderr)
        return ExitCode.INTERRUPTED
