"""`orchestrate export LABEL`: rebuild a campaign's ledger, summary and provenance;
`orchestrate export --verify LABEL`: check them (non-zero exit and the failing line on any mismatch);
`orchestrate export --verify DIR [--regrade]`: check a publication bundle on its own, in any
folder (`orchestrate publish`; orchestrator/publish/verify.py), naming every file that
differs; `--regrade` grades its final databases again and compares every verdict;
`--replay` (bundle or label) re-derives every attempt's final database from its audit log on a
fresh copy of its scenario and compares canonical hashes, naming the first diverging request.

Exit status (docs/exit-codes.md): 0 done / verified, 1 verification found problems, 2 no such
label or a campaign.json that cannot be read. Never needs the container engine.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `export` subcommand."""
    p = sub.add_parser("export", help="write or --verify a campaign's attempts.jsonl, summary.json, provenance.json")
    p.add_argument("label", help="campaign label (a folder under the runs root), or with --verify a bundle folder")
    p.add_argument("--verify", action="store_true", help="verify instead of writing")
    p.add_argument("--no-folders", action="store_true", help="with --verify: do not compare lines with attempt folders")
    p.add_argument("--regrade", action="store_true", help="with --verify on a bundle: re-grade its final databases")
    p.add_argument("--replay", action="store_true",
                   help="with --verify: replay every attempt's audit log on a fresh scenario and compare canonical hashes")
    p.add_argument("--runs-root", type=Path, help="folder holding campaign labels (default: the runtime's runs/)")
    p.set_defaults(func=run)


def verify_bundle_folder(folder: Path, regrade: bool, replay: bool = False) -> int:
    """Verify a publication bundle; print what was checked, or every problem (naming its file)."""
    from orchestrator.exit_codes import ExitCode
    from orchestrator.publish.verify import verify_bundle

    report = verify_bundle(folder, regrade_dbs=regrade, replay=replay)
    for note in report.notes:
        print(f"note: {note}")
    if report.ok:
        regraded = f"; {report.regraded} final database(s) re-graded to the same verdicts" if regrade else ""
        print(f"verified bundle {folder}: {report.files} files, {report.lines} ledger lines{regraded}")
        return ExitCode.OK
    print(f"verification FAILED for bundle {folder}:", file=sys.stderr)
    for problem in report.problems:
        print(f"  {problem}", file=sys.stderr)
    return ExitCode.NEGATIVE


def replay_label(root: Path) -> list[str]:
    """Replay every attempt of a label from its audit log (orchestrator/study/evidence.py); the problems."""
    from orchestrator.campaign.export import planned_identities, read_declaration
    from orchestrator.study.evidence import replay_folders

    declaration = read_declaration(root) or {}
    folders = [(i, i.folder(root.parent, root.name), i.folder(root.parent, root.name).relative_to(root).as_posix())
               for i in planned_identities(declaration) if i.folder(root.parent, root.name).is_dir()]
    done = replay_folders(folders)
    for note in done.notes:
        print(f"note: {note}")
    print(f"replay: {done.replayed} attempt(s) re-derived from their audit logs")
    return done.problems


def default_runs_root() -> Path:
    """The runtime's runs root (PB_RUNS_ROOT or runs/ in the repository)."""
    from orchestrator.config import RuntimeConfig

    return RuntimeConfig.from_env().runs_root


def run(args: argparse.Namespace) -> int:
    """Export or verify one label."""
    from orchestrator.campaign.export import ExportError, export_label, verify_label
    from orchestrator.exit_codes import ExitCode
    from orchestrator.publish.bundle import BUNDLE_FILE

    candidate = Path(args.label)
    if args.verify and args.runs_root is None and (candidate / BUNDLE_FILE).is_file():
        return verify_bundle_folder(candidate, args.regrade, args.replay)
    runs_root = (args.runs_root or default_runs_root()).resolve()
    if args.verify and (runs_root / args.label / BUNDLE_FILE).is_file():
        return verify_bundle_folder(runs_root / args.label, args.regrade, args.replay)
    if not (runs_root / args.label).is_dir():
        print(f"orchestrate export: bad_input: no campaign {args.label!r} under {runs_root}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.verify:
        report = verify_label(runs_root, args.label, check_folders=not args.no_folders)
        if args.replay and report.ok:
            report.problems += replay_label(runs_root / args.label)
        if report.ok:
            print(f"verified {args.label}: {report.lines} ledger lines, hashes, matrix, canonical form and summary agree")
            return ExitCode.OK
        print(f"verification FAILED for {args.label}:", file=sys.stderr)
        for problem in report.problems:
            print(f"  {problem}", file=sys.stderr)
        return ExitCode.NEGATIVE
    try:
        summary = export_label(runs_root, args.label)
    except ExportError as exc:
        print(f"orchestrate export: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    m = summary["matrix"]
    print(f"exported {args.label}: {m['present']}/{m['planned']} attempts -> {runs_root / args.label}")
    return ExitCode.OK
