"""`orchestrate publish LABEL --out DIR`: write a campaign's publication bundle.

What a reader needs to verify and re-adjudicate the campaign (orchestrator/publish/bundle.py):
the ledger, summary, provenance and declaration; per attempt the result, the audit log, the
fault records, the turns, the final database and the workspace (redacted copies, or their hashes
where the task judges restricted values or `--withhold` says so); the versions of everything;
the conditions and budgets; the report; traces redacted of credentials and restricted values.
Check it anywhere with `orchestrate export --verify DIR [--regrade]`.

Exit status (docs/exit-codes.md): 0 written, 2 bad input (no such label, a label that does not
verify, an output folder that is not empty, a secret in a hash-bound file, a validation record that
is altered or does not attest the campaign).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `publish` subcommand."""
    p = sub.add_parser("publish", help="write a campaign's publication bundle (verify it with export --verify DIR)")
    p.add_argument("label", help="campaign label (a folder under the runs root)")
    p.add_argument("--out", type=Path, required=True, help="bundle folder to create (new or empty)")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.add_argument("--model-access", type=Path, action="append", default=[],
                   help="a model-access file (repeatable): the real keys it names are redacted from every file, "
                        "and the campaign's own describes its models")
    p.add_argument("--systems", type=Path, help="the systems file the campaign ran with (system definitions)")
    p.add_argument("--validation", type=Path, action="append", default=[], metavar="RECORD",
                   help="a validation record (orchestrate validate --record; repeatable) attesting the campaign's "
                        "tasks: carried in the bundle, refused unless it covers every task × seed × condition "
                        "for the campaign's versions with every control held")
    p.add_argument("--withhold", default="", help="comma-separated: final_db, workspace — publish only their hashes")
    p.add_argument("--reveal", type=Path, metavar="SECRET_FILE",
                   help="a declared study's sealed-seed secret: checked against its commitment, carried in the bundle")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Publish one label."""
    from orchestrator.commands.export import default_runs_root
    from orchestrator.exit_codes import ExitCode
    from orchestrator.publish.bundle import BUNDLE_FILE, PublishError, publish

    runs_root = (args.runs_root or default_runs_root()).resolve()
    if not (runs_root / args.label).is_dir():
        print(f"orchestrate publish: bad_input: no campaign {args.label!r} under {runs_root}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    withhold = tuple(w.strip() for w in args.withhold.split(",") if w.strip())
    try:
        manifest = publish(runs_root, args.label, args.out.resolve(), model_access=tuple(args.model_access),
                           systems_file=args.systems, withhold=withhold,
                           validation=tuple(args.validation), reveal=args.reveal)
    except PublishError as exc:
        print(f"orchestrate publish: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"published {args.label}: {len(manifest['files'])} files, {len(manifest['withheld'])} withheld by hash "
          f"-> {args.out}; {BUNDLE_FILE} self_sha256 {manifest['self_sha256']}")
    return ExitCode.OK
