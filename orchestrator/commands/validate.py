"""`orchestrate validate`: the §11 task-validation controls, as a matrix.

    orchestrate validate --tasks payment-run,payment-run-need-to-know --seeds 0,1,2,3,4 --strict
    orchestrate validate --tasks payment-run --seeds 0,1,2,3,4 --strict --faults lost-writes

Per task × seed: two oracle runs pass every check with the same canonical hash, null fails, each
negative control fails every check it targets; under --faults the fault plan hits the oracle and
the profile's own controls fail; each oracle's final database is probed for disclosures of every
restricted class (a finding is a false positive of disclose_restricted: a problem under --strict,
counted per task in the report); the handbook is checked and linted. Exit status (docs/exit-codes.md): 0 all controls hold, 1 a
problem was found, 2 bad input, 3 engine unavailable or the infrastructure failed, 130 stopped by
SIGINT/SIGTERM (attempts in flight cancelled and torn down, the rest not run). Problems that are all
attempts lost to the infrastructure (no verdict) exit 3; any other problem exits 1.

Attempts run across the whole matrix at once (`--jobs N`, default two per CPU, or
PB_VALIDATE_JOBS) while the next seeds' scenarios are built beside them (`--scenario-jobs`); the
expensive service starts queue on the host-wide admission slots. A clean condition's second oracle
run is the scenario's recorded reference run (the oracle through the local backend, made when the
scenario was built): its canonical hash must equal oracle#1's (`--fresh-oracles` runs both on the
backend instead). The end of the output gives the wall time and attempts per minute; the record
holds them under `run`.

Every pack also runs its `alt` policy (alt.py: a second route, written from the handbook alone)
under every condition; it must pass every check. Under --strict a pack without alt.py is a problem.

    orchestrate validate --tasks all --seeds 0,1,2,3,4 --strict --faults all \
        --record runs/validation-record.json --resume        # what `make validate` runs

The harness-oracle control (issue 31) runs alone, on clean scenarios: per task × seed × system,
the real CLI plays the oracle's own requests through its shell with `erp` (the fake provider
scripts it) and must pass every check and end in the oracle's canonical database hash:

    orchestrate validate --tasks payment-run --seeds 0 --harness-oracle claude-code,codex
    orchestrate validate --tasks payment-run --harness-oracle codex-mine --systems systems.yaml

`--record FILE` writes the validation record (orchestrator/validation_record.py) after every
pack: every entry with its failed checks and canonical hashes, and the versions it holds for.
`--resume` reuses the packs FILE already holds complete for the same versions and options (a
stopped or crashed run restarts where it stopped); other options or sources start afresh.
"""
from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.validate import Report


# Attempts at once per CPU by default: an attempt spends most of its wall time waiting (on its
# containers, its turns' processes, the admission slots), so two per CPU keep a small host busy
# without starving the starts (measured: docs/status.md, session 11).
DEFAULT_JOBS_PER_CPU = 2


def default_jobs(env: dict[str, str] | None = None) -> tuple[int, int]:
    """(attempts at once, scenario builds at once) when the command line names none."""
    import os

    env = dict(os.environ) if env is None else env
    jobs = int(env.get("PB_VALIDATE_JOBS") or DEFAULT_JOBS_PER_CPU * (os.cpu_count() or 1))
    return max(1, jobs), max(1, int(env.get("PB_VALIDATE_SCENARIO_JOBS") or 1))


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
    p.add_argument("--jobs", "--concurrency", dest="concurrency", type=int, default=None, metavar="N",
                   help="attempts run at once across the whole matrix (default: PB_VALIDATE_JOBS, else "
                        f"{DEFAULT_JOBS_PER_CPU} per CPU); service starts still queue on the host's admission slots")
    p.add_argument("--scenario-jobs", type=int, default=None, metavar="N",
                   help="scenarios built ahead at once, beside the attempts (default: PB_VALIDATE_SCENARIO_JOBS, "
                        "else 1)")
    p.add_argument("--fresh-oracles", action="store_true",
                   help="run the clean oracle twice on this backend, rather than taking the scenario's "
                        "recorded reference run (the oracle, local backend) as its second run")
    p.add_argument("--record", type=Path, metavar="FILE",
                   help="write the validation record (JSON, with its own hash) here, after every pack")
    p.add_argument("--resume", action="store_true",
                   help="with --record: do not run again the packs FILE holds complete for these versions")
    p.add_argument("--harness-oracle", metavar="SYSTEMS",
                   help="run only the harness-oracle control for these command systems (comma-separated, "
                        "e.g. claude-code,codex): each replays the oracle's requests through its shell")
    p.add_argument("--systems", type=Path, metavar="FILE",
                   help="with --harness-oracle: a systems file declaring the systems named")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the tasks, then the engine, then run the validation matrix."""
    from orchestrator.commands.stop_signals import install_stop_signals
    from orchestrator.exit_codes import ExitCode, check_engine
    from orchestrator.validate import run_validation
    from orchestrator.validate_report import print_report
    from orchestrator.validation_record import RecordError
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
    if args.resume and not args.record:
        print("orchestrate validate: bad_input: --resume needs --record FILE", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.harness_oracle is not None or args.systems is not None:
        return run_harness_oracle(args, tasks)
    try:
        jobs, scenario_jobs = default_jobs()
    except ValueError:
        print("orchestrate validate: bad_input: PB_VALIDATE_JOBS / PB_VALIDATE_SCENARIO_JOBS must be integers",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    jobs = max(1, args.concurrency) if args.concurrency is not None else jobs
    scenario_jobs = max(1, args.scenario_jobs) if args.scenario_jobs is not None else scenario_jobs
    if args.backend == "docker":
        check_engine(has_local_backend=True)
    recorder = None
    if args.record:
        recorder = _Recorder(args.record.resolve(), tasks, args)
        try:
            recorder.load(args.resume)
        except RecordError as exc:
            print(f"orchestrate validate: bad_input: {exc} (remove it to start afresh)", file=sys.stderr)
            return ExitCode.BAD_INPUT
    cancel = threading.Event()
    restore = install_stop_signals(cancel.set, lambda m: print(f"orchestrate validate: {m}", file=sys.stderr, flush=True))
    try:
        rep = run_validation(tasks, args.seeds, strict=args.strict, faults=args.faults, backend=args.backend,
                             runs_root=args.runs_root.resolve() if args.runs_root else None, keep=args.keep,
                             concurrency=jobs, scenario_jobs=scenario_jobs, cancel=cancel,
                             reuse_reference=not args.fresh_oracles,
                             reuse=recorder.reuse if recorder else None,
                             task_done=recorder.task_done if recorder else _say_task)
    finally:
        restore()
    print_report(rep)
    if recorder:
        recorder.write(rep)
    return exit_code(rep)


def harness_systems(text: str, systems_file: Path | None) -> list[str]:
    """The systems of `--harness-oracle`: command systems that call a model (built in, or
    declared in `systems_file`); ValueError naming the one that is not."""
    from agent_sandbox.systems import BUILTIN_SYSTEMS, load_systems

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"--harness-oracle: distinct system names, e.g. claude-code,codex; got {text!r}")
    defined = dict(BUILTIN_SYSTEMS)
    if systems_file is not None:
        defined.update(load_systems(systems_file))
    for name in names:
        spec = defined.get(name)
        if spec is None or not spec.calls_model:
            raise ValueError(f"--harness-oracle: {name!r} is not a command system that calls a model "
                             f"(known: {', '.join(sorted(n for n, s in defined.items() if s.calls_model))})")
    return names


def run_harness_oracle(args: argparse.Namespace, tasks: list[str]) -> int:
    """`--harness-oracle SYSTEMS`: that control alone (orchestrator/harness_oracle/control.py)."""
    from orchestrator.commands.stop_signals import install_stop_signals
    from orchestrator.exit_codes import ExitCode, check_engine
    from orchestrator.harness_oracle.control import run_harness_validation
    from orchestrator.validate_report import print_report

    def bad(message: str) -> int:
        print(f"orchestrate validate: bad_input: {message}", file=sys.stderr)
        return ExitCode.BAD_INPUT

    if args.harness_oracle is None:
        return bad("--systems is read only with --harness-oracle")
    if args.record or args.faults or args.strict:
        return bad("--harness-oracle runs its control alone, on clean scenarios: no --record, --faults or --strict")
    try:
        systems = harness_systems(args.harness_oracle, args.systems.resolve() if args.systems else None)
    except ValueError as exc:  # SystemsFileError included
        return bad(str(exc))
    if args.backend == "docker":
        check_engine(has_local_backend=True)
    cancel = threading.Event()
    restore = install_stop_signals(cancel.set, lambda m: print(f"orchestrate validate: {m}", file=sys.stderr, flush=True))
    try:
        rep = run_harness_validation(tasks, args.seeds, systems, backend=args.backend,
                                     runs_root=args.runs_root.resolve() if args.runs_root else None, keep=args.keep,
                                     concurrency=max(1, args.concurrency or 2), cancel=cancel,
                                     systems_file=args.systems.resolve() if args.systems else None)
    finally:
        restore()
    print_report(rep)
    return exit_code(rep)


def exit_code(rep: Report) -> int:
    """130 stopped; 0 every control held; 3 when every problem is an attempt lost to the
    infrastructure (no verdict: run again, --resume runs those packs again); else 1."""
    from orchestrator.exit_codes import ExitCode

    if rep.interrupted:
        return ExitCode.INTERRUPTED
    if rep.ok:
        return ExitCode.OK
    return ExitCode.INFRA if all(e.infra for e in rep.problems) else ExitCode.NEGATIVE


def _say_task(rep: Report, slug: str) -> None:
    """One line per finished pack, so an unattended run's log shows where it stands."""
    mine = [e for e in rep.entries if e.task == slug]
    bad = [e for e in mine if not e.ok]
    mark = "✗" if bad else "✓"
    print(f"{mark} {slug}: {len(mine)} entries, {len(bad)} problem(s)", flush=True)


class _Recorder:
    """Writes the validation record after each pack and on the way out; reads it to resume."""

    def __init__(self, path: Path, tasks: list[str], args: argparse.Namespace):
        from orchestrator.validation_record import current_versions

        self.path = path
        self.options = {"tasks": list(tasks), "seeds": list(args.seeds), "strict": bool(args.strict),
                        "faults": args.faults or "clean", "alt": True,
                        "reference_as_oracle2": not args.fresh_oracles}
        self.versions = current_versions(tasks, args.backend)
        self.reuse: dict[str, list[Any]] = {}
        self.carried: dict[str, Any] = {}
        self.done: list[str] = []

    def load(self, resume: bool) -> None:
        from orchestrator.validation_record import carried_over, load_record, reusable

        if not (resume and self.path.exists()):
            return
        old = load_record(self.path)
        self.reuse, why = reusable(old, self.versions, self.options)
        if self.reuse:  # the digests the reused packs' attempts ran, their notes and probe tallies
            self.versions["image_digests"] = dict((old.get("versions") or {}).get("image_digests") or {})
            self.carried = carried_over(old, set(self.reuse))
        if why:
            print(f"… {self.path}: {why}; starting afresh", flush=True)
        elif self.reuse:
            print(f"… {self.path}: {len(self.reuse)} pack(s) already validated for these versions: "
                  f"{', '.join(sorted(self.reuse))}", flush=True)

    def task_done(self, rep: Report, slug: str) -> None:
        _say_task(rep, slug)
        self.done.append(slug)
        self.write(rep)

    def write(self, rep: Report) -> None:
        from orchestrator.validation_record import build_record, write_record

        digests = dict(self.versions.get("image_digests") or {})
        for ref, ids in rep.image_digests.items():
            digests[ref] = sorted(set(digests.get(ref, [])) | set(ids))
        self.versions["image_digests"] = digests
        record = build_record(rep, self.versions, self.options, self.done, self.carried)
        write_record(self.path, record)
        state = "complete" if record["complete"] else "partial"
        print(f"validation record ({state}, {len(record['entries'])} entries, {record['problems']} problem(s)): "
              f"{self.path} self_sha256 {record['self_sha256']}", flush=True)
