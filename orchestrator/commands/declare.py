"""`orchestrate declare`: write a study declaration before the campaign runs (issue 39).

    orchestrate declare --cells oracle:payment-run,null:payment-run --seeds 0 --reps 5 --out study.json
    orchestrate declare --cells campaign.yaml --sealed-seeds 5 --seed-secret secret.key \\
        --validation validation/record.json --analysis analysis.yaml --out study.json
    orchestrate campaign --cells ... --declared study.json [--seed-secret secret.key]

The declaration holds the cells, task versions and trees, systems, shared sources and image tags,
budgets and limits, repetitions, public seeds, the analysis plan and, with `--sealed-seeds N`, only
the commitment to N seeds drawn from a private range by the secret in `--seed-secret` (created,
mode 0600, when the file does not exist; keep it private until the reveal: `orchestrate publish
... --reveal FILE`). Its SHA-256 is printed: timestamp it by any outside means you have.

Exit status (docs/exit-codes.md): 0 written, 2 bad input. Never needs the container engine.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `declare` subcommand."""
    p = sub.add_parser("declare", help="write a study declaration (and its hash) before running its campaign",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", help="comma list of SYSTEM:TASK[+CONDITION], or a campaign YAML file")
    p.add_argument("--seeds", help="public seeds: comma list or a range a-b (default 0, none with --sealed-seeds)")
    p.add_argument("--reps", type=int, help="repetitions per cell and seed (default 1)")
    p.add_argument("--timeout", type=float, help="override every turn budget, seconds")
    p.add_argument("--retries", type=int, help="retries of an attempt that ends infra_error (default 2)")
    p.add_argument("--systems", help="systems file defining command systems")
    p.add_argument("--model-access", help="model access file (its SHA-256 is declared: upstream, models, budget)")
    p.add_argument("--backend", choices=["docker", "local"], help="where attempts will run (default docker)")
    p.add_argument("--analysis", type=Path, help="YAML analysis plan: metrics, comparisons, convention "
                   "(default: the summary's own)")
    p.add_argument("--sealed-seeds", type=int, default=0, metavar="N", help="N held-out seeds, sealed by --seed-secret")
    p.add_argument("--seed-secret", type=Path, metavar="FILE", help="the secret of the sealed seeds (created if missing)")
    p.add_argument("--seed-range", default=None, metavar="LO-HI", help="the private range of sealed seeds "
                   "(default 1000000-2000000000)")
    p.add_argument("--validation", type=Path, action="append", default=[], metavar="RECORD",
                   help="validation record(s): the sealed range must hold none of the seeds they used")
    p.add_argument("--out", type=Path, default=Path("study.json"), help="the declaration to write (default study.json)")
    p.set_defaults(func=run)


def _range(text: str | None) -> tuple[int, int]:
    from orchestrator.errors import ConfigError
    from orchestrator.study.seeds import DEFAULT_RANGE

    if text is None:
        return DEFAULT_RANGE
    try:
        lo, hi = (int(x) for x in text.split("-", 1))
    except ValueError:
        raise ConfigError(f"--seed-range: {text!r} is not LO-HI") from None
    return lo, hi


def run(args: argparse.Namespace) -> int:
    """Build the declaration from the flags and this checkout, write it, print its hash."""
    from orchestrator.campaign.declaration import DeclarationChanged
    from orchestrator.campaign.lifecycle import Campaign
    from orchestrator.campaign.spec import spec_from_args
    from orchestrator.errors import ConfigError
    from orchestrator.exit_codes import ExitCode
    from orchestrator.study.declaration import build_study, load_analysis, write_study
    from orchestrator.study.seeds import SealedSeedError, new_secret_file, read_secret, record_seeds, sealed_block
    from orchestrator.validation_record import RecordError, load_record

    def bad(text: str) -> int:
        print(f"orchestrate declare: bad_input: {text}", file=sys.stderr)
        return ExitCode.BAD_INPUT

    try:
        spec = spec_from_args(args.cells, seeds=args.seeds, reps=args.reps, timeout=args.timeout, systems=args.systems,
                              model_access=args.model_access, backend=args.backend, retries=args.retries)
        public = [] if args.sealed_seeds and args.seeds is None else list(spec.seeds)
        sealed = None
        if args.sealed_seeds:
            if args.seed_secret is None:
                return bad("--sealed-seeds needs --seed-secret FILE (created when missing)")
            lo, hi = _range(args.seed_range)
            used = set(public)
            for path in args.validation:
                used |= record_seeds(load_record(path))
            inside = sorted(s for s in used if lo <= s < hi)
            if inside:
                return bad(f"the sealed range [{lo}, {hi}) holds seeds used in development or validation: {inside[:5]}")
            secret = read_secret(args.seed_secret) if args.seed_secret.exists() else new_secret_file(args.seed_secret)
            sealed = sealed_block(secret, (lo, hi), args.sealed_seeds)
        elif args.seed_secret is not None:
            return bad("--seed-secret needs --sealed-seeds N")
        campaign = Campaign(spec, runs_root=None)
        campaign.check()
        study = build_study(campaign.declaration.to_json() if campaign.declaration else {}, public_seeds=public,
                            turn_s=spec.turn_timeout_s, infra_retries=spec.budgets.infra_retries,
                            model_access=spec.model_access, analysis=load_analysis(args.analysis), sealed=sealed)
    except (ConfigError, DeclarationChanged, RecordError, SealedSeedError, ValueError, OSError) as exc:
        return bad(str(exc))
    digest = write_study(args.out, study)
    seeds = f"{len(public)} public seed(s)" + (f", {args.sealed_seeds} sealed (commitment {sealed['commitment'][:16]}…)"
                                               if sealed else "")
    print(f"declared {args.out}: {len(study['cells'])} cell(s), {seeds}, {study['reps']} rep(s)")
    print(f"sha256 {digest}")
    return ExitCode.OK
