"""`orchestrate human TASK --seed N [--label L] [--assisted]`: a person works the attempt's turns.

    orchestrate human payment-run --seed 0
    orchestrate human payment-run --seed 0 --label pilot-humans --assisted --rep 2
    orchestrate human payment-run --seed 0 --port 8090 --backend local

An isolated attempt like any other (its own ERP from the scenario snapshot, the same turns,
budgets, handbook, grading), but no agent container: the ERP is shown in a browser UI
(erp_web) that acts only through the agent API with the agent user's token. The sign-in link is
printed (host loopback only); each turn shows its request, the handbook and a countdown of the
turn's budget, and ends with the "End turn" button or when the budget runs out. Then the clock
advances, and after the last turn the attempt is graded.

The attempt's system is `human` (unaided) or `human-assisted` (`--assisted`: the person used
help they declare, e.g. a chat assistant); its cell is `human:TASK` or `human-assisted:TASK`,
so its records are never pooled with an agent's cells.

By default the attempt runs on the docker backend, isolated like an agent's attempt (`isolation:
docker`): the ERP in its container on the attempt's private networks, and the web UI in its own
container from the ERP image on the attempt network, calling the ERP by name. Only the UI is
published, on host loopback (127.0.0.1, an ephemeral port or `--port`); nothing else of the
attempt is, and the UI never joins the control network. `--backend local` runs both as host
processes bound to 127.0.0.1 (`isolation: none`). Either way the person needs a browser on this
machine (or an SSH tunnel to its loopback).

Exit status (docs/exit-codes.md): 0 graded (pass or fail: see the verdict), 2 bad input,
3 infra_error or engine unavailable, 4 task_error, 130 interrupted.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.exit_codes import ExitCode, Failure

EXIT = {"graded": ExitCode.OK, "agent_error": Failure.AGENT_ERROR.code, "infra_error": Failure.INFRA_ERROR.code,
        "task_error": Failure.TASK_ERROR.code}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `human` subcommand."""
    p = sub.add_parser("human", help="a person works an attempt's turns in the browser (human baseline)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", help="task slug, e.g. payment-run (or TASK+CONDITION)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--label", default="human",
                   help="runs/<label>/ (default human) — keep human baselines under labels of their own")
    p.add_argument("--rep", type=int, default=1, help="repetition number, from 1 (default 1)")
    p.add_argument("--assisted", action="store_true", help="the person works with declared assistance (system human-assisted)")
    p.add_argument("--timeout", type=float, help="override every turn's budget, seconds")
    p.add_argument("--backend", choices=["docker", "local"], default="docker",
                   help="docker (default: isolated, the UI in a container published on 127.0.0.1) or local (host processes)")
    p.add_argument("--port", type=int, default=0, help="host loopback port of the web UI (default: an ephemeral one)")
    p.add_argument("--runs-root", type=Path, help="where labels live (default: runs/ of the repo)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the lifecycle to stderr")
    p.set_defaults(func=run)


def human_cell_text(task: str, assisted: bool) -> str:
    """`human:TASK[+CONDITION]` or `human-assisted:...` for a task given as `TASK[+CONDITION]`."""
    return f"{'human-assisted' if assisted else 'human'}:{task}"


def run(args: argparse.Namespace) -> int:
    """Check the inputs, run the attempt with the person at the browser, print the verdict."""
    from orchestrator.attempt import AttemptSpec
    from orchestrator.attempt.inputs import check_conditions, check_label, check_turn_budget, lint_gate, task_info
    from orchestrator.backends import make_backend
    from orchestrator.cells import CellError, parse_cell
    from orchestrator.commands.attempt import run_one_attempt
    from orchestrator.config import RuntimeConfig
    from orchestrator.errors import ConfigError
    from orchestrator.logs import configure_console

    configure_console(args.verbose)
    try:
        if ":" in args.task:
            raise ConfigError(f"give the task (e.g. payment-run), not a cell: {args.task!r}")
        cell = parse_cell(human_cell_text(args.task, args.assisted))
        if args.seed < 0 or args.rep < 1:
            raise ConfigError("--seed must be >= 0 and --rep >= 1")
        if not 0 <= args.port <= 65535:
            raise ConfigError(f"--port {args.port}: a TCP port (1-65535), or 0 for an ephemeral one")
        check_label(args.label)
        check_turn_budget(args.timeout)
        task_info([cell.task])
        lint_gate([cell.task])
        check_conditions([cell])
    except (CellError, ConfigError) as exc:
        print(f"orchestrate human: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    overrides: dict[str, object] = {"campaign": args.label, "web_port": args.port}
    if args.runs_root:
        overrides["runs_root"] = args.runs_root.resolve()
    config = RuntimeConfig.from_env(**overrides)
    if args.backend == "docker":
        from orchestrator.exit_codes import check_engine

        check_engine(has_local_backend=True)  # a dead engine: one line and exit 3, before the scenario is built
    backend = make_backend(args.backend, config)
    spec = AttemptSpec(cell=cell, seed=args.seed, rep=args.rep, label=args.label, timeout_override_s=args.timeout)
    result = run_one_attempt("human", spec, backend, config)
    if isinstance(result, int):
        return result
    rec = result.record
    verdict = ("PASS" if rec["passed"] else "FAIL") if rec["outcome"] == "graded" else "not scored"
    print(f"system:   {rec['system']}   cell: {rec['cell']}")
    print(f"outcome:  {rec['outcome']}")
    print(f"verdict:  {verdict}{' (breach)' if rec.get('breach') else ''}")
    failed = [c.get("name") for c in rec.get("checks", []) if not c.get("passed")]
    if rec.get("checks"):
        print(f"checks:   {len(rec['checks']) - len(failed)}/{len(rec['checks'])} passed" + (f"; failed: {', '.join(map(str, failed))}" if failed else ""))
    for t in rec.get("turns", []):
        print(f"turn {t['n']}:   {t['date']} {t['duration_s']:.0f}s of {t['budget_s']:.0f}s — {'; '.join(t.get('notes') or [])}")
    if rec.get("error"):
        print(f"error:    [{rec['error'].get('phase')}] {rec['error'].get('message')}")
    print(f"isolation: {rec['isolation']}   total {rec['timings'].get('total_s', 0):.0f}s")
    print(f"folder:   {result.paths.root}")
    return EXIT.get(rec["outcome"], ExitCode.INFRA)
