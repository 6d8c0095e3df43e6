"""`orchestrate scenario export|import`: a scenario as JSON Lines (docs/scenario-jsonl.md).

    orchestrate scenario export payment-run --seed 0 --out payment-run-0.jsonl [--truth truth.jsonl]
    orchestrate scenario import payment-run-0.jsonl --out DIR [--truth truth.jsonl]

`export` writes the scenario of a pack at a seed (built and cached if missing); the truth goes to
its own file only when `--truth` is given. `import` rebuilds a scenario directory in bb-erp and
prints its canonical hash (the same as the exported scenario's).

Exit status (docs/exit-codes.md): 0 done, 2 bad input, 4 the pack's scenario cannot be built.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `scenario` subcommand."""
    p = sub.add_parser("scenario", help="export a scenario as JSON Lines, or import one into bb-erp",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    inner = p.add_subparsers(dest="scenario_command", required=True, metavar="ACTION")
    e = inner.add_parser("export", help="write a pack's scenario at a seed as JSON Lines")
    e.add_argument("task", help="task pack id, e.g. payment-run")
    e.add_argument("--seed", type=int, required=True)
    e.add_argument("--out", type=Path, required=True, help="the JSON Lines file to write")
    e.add_argument("--truth", type=Path, help="also write the truth (kept apart) to this file")
    e.set_defaults(func=run_export)
    i = inner.add_parser("import", help="rebuild a scenario directory from its JSON Lines")
    i.add_argument("file", type=Path)
    i.add_argument("--out", type=Path, required=True, help="the scenario directory to create (must not exist)")
    i.add_argument("--truth", type=Path, help="the truth file written by export --truth")
    i.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    """Export one scenario."""
    from erp_service.canonical import canonical_hash
    from orchestrator.scenarios.cache import ensure_scenario
    from orchestrator.scenarios.jsonl import export_scenario

    scenario = ensure_scenario(args.task, args.seed, reference=False)
    lines = export_scenario(scenario.dir, args.out, args.truth)
    print(f"exported {args.task} seed {args.seed}: {lines} lines -> {args.out}")
    print(f"canonical sha256 {canonical_hash(scenario.db)}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Import one scenario."""
    from erp_service.canonical import canonical_hash
    from orchestrator.scenarios.jsonl import ScenarioJsonlError, import_scenario

    try:
        out = import_scenario(args.file, args.out, args.truth)
    except ScenarioJsonlError as exc:
        print(f"orchestrate scenario: bad_input: {exc}", file=sys.stderr)
        return 2
    print(f"imported {args.file} -> {out}")
    print(f"canonical sha256 {canonical_hash(out / 'scenario.db')}")
    return 0
