"""`orchestrate images build|release|prune`: the project's images, built offline, cached by hash.

Exit status (docs/exit-codes.md): 0 done, 2 bad input, 3 engine unavailable or the build failed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.exit_codes import ExitCode, check_engine
from orchestrator.images import ImageBuildError, docker_client, ensure_images, ensure_variant
from orchestrator.images.config import VARIANT_IMAGES
from orchestrator.images.prune import prune_images
from orchestrator.images.release import DEFAULT_RELEASE_ROLES, RELEASE_ROLES, release_images


def _say(msg: str) -> None:
    print(msg, flush=True)


def _build(args: argparse.Namespace) -> int:
    check_engine()
    try:
        client = docker_client()
        images = list(ensure_images(client, force=args.force, no_cache=args.no_cache, report=_say))
        # The agent CLIs' images (Claude Code, Codex): built here too, so that a campaign of the
        # built-in systems never waits for a build, unless left out on purpose.
        if not args.no_variants:
            images += [ensure_variant(client, role, force=args.force or args.no_cache, report=_say)
                       for role in VARIANT_IMAGES]
    except ImageBuildError as exc:
        print(f"orchestrate images build: infra_error: {exc}", file=sys.stderr)
        return ExitCode.INFRA
    for ref in images:
        state = f"built in {ref.seconds:.1f}s" if ref.built else "up to date"
        print(f"{ref.role:<12} {ref.tag:<28} {ref.id[7:19]}  {state}")
    return 0


def _release(args: argparse.Namespace) -> int:
    roles = [r.strip() for r in args.images.split(",") if r.strip()]
    unknown = sorted(set(roles) - set(RELEASE_ROLES))
    if unknown or not roles:
        print(f"orchestrate images release: bad_input: --images {args.images!r}: choose from {', '.join(RELEASE_ROLES)}",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    check_engine()
    try:
        manifest = release_images(Path(args.out), roles=roles, report=_say)
    except ImageBuildError as exc:
        print(f"orchestrate images release: infra_error: {exc}", file=sys.stderr)
        return ExitCode.INFRA
    except ValueError as exc:
        print(f"orchestrate images release: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"manifest: {manifest}")
    return 0


def _prune(args: argparse.Namespace) -> int:
    check_engine()
    result = prune_images(dry_run=args.dry_run, report=_say)
    for line in result.kept:
        print(f"kept {line}")
    print(f"{len(result.removed)} removed, {len(result.kept)} kept")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `images` with its `build` and `release` subcommands."""
    parser = sub.add_parser("images", help="build or release the container images (offline, cached by content hash)")
    isub = parser.add_subparsers(dest="images_command", required=True, metavar="ACTION")

    build = isub.add_parser("build", help="build the base, ERP, agent, gateway and agent CLI images if missing or stale")
    build.add_argument("--force", action="store_true",
                       help="rebuild the images even if up to date (reuses the cached rootfs and wheels)")
    build.add_argument("--no-cache", action="store_true",
                       help="rebuild everything: debootstrap, wheel downloads and Docker's layer cache")
    build.add_argument("--no-variants", action="store_true",
                       help=f"leave out the agent CLI images ({', '.join(VARIANT_IMAGES)}); they are then "
                            "built when a campaign first needs one")
    build.set_defaults(func=_build)

    release = isub.add_parser("release", help="write image tarballs and manifest.json into a folder")
    release.add_argument("--out", required=True, metavar="DIR", help="folder for the tarballs and manifest.json")
    release.add_argument("--images", default=",".join(DEFAULT_RELEASE_ROLES),
                         help=f"comma list of {', '.join(RELEASE_ROLES)} (default: %(default)s; each tarball "
                              "includes the base's layers)")
    release.set_defaults(func=_release)

    prune = isub.add_parser("prune", help="remove pb-* image tags the current sources no longer produce")
    prune.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    prune.set_defaults(func=_prune)
