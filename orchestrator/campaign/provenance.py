"""`provenance.json`: where a campaign's numbers come from.

Project commit (and whether the tree was dirty), each task's version and tree hash, the image
digests the attempts ran on, the ledger's SHA-256 and each line's, the conditions, and the
backend/isolation. Verification checks the ledger against it.
"""
from __future__ import annotations

import datetime as dt
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

from orchestrator.hashing import canonical_json, sha256_bytes, tree_sha256

PROVENANCE_FILE = "provenance.json"
REPO_ROOT = Path(__file__).resolve().parents[2]
# Task trees are hashed by orchestrator.hashing.tree_sha256 (also importable from here).
__all__ = ["PROVENANCE_FILE", "build_provenance", "git_commit", "image_digests", "tree_sha256"]


def git_commit(repo: Path = REPO_ROOT) -> dict[str, Any]:
    """`{"commit", "dirty"}` of the project checkout (None when git is unavailable)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "dirty": bool(status) if status is not None else None,
        # the committed task tree, comparable across checkouts (the per-task hashes cover the files on disk)
        "tasks_tree": git("rev-parse", "HEAD:tasks"),
    }


def image_digests(label_root: Path) -> dict[str, list[str]]:
    """Image references -> digests/ids recorded in the attempts' attempt.json files."""
    found: dict[str, set[str]] = {}
    for path in sorted(label_root.glob("*/seed-*/rep-*/attempt.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        images = data.get("images")
        if images is None and isinstance(data.get("backend"), dict):
            # the runtime's attempt.json: backend.images = {role: {"tag", "id"}}
            images = {
                (v.get("tag") or role): v for role, v in (data["backend"].get("images") or {}).items() if isinstance(v, dict)
            }
        if isinstance(images, dict):
            for name, value in images.items():
                if isinstance(value, dict):
                    value = value.get("id") or value.get("digest") or canonical_json(value)
                found.setdefault(str(name), set()).add(str(value))
    return {k: sorted(v) for k, v in sorted(found.items())}


def build_provenance(
    declaration: dict[str, Any], ledger_text: str, label_root: Path, *, repo: Path = REPO_ROOT
) -> dict[str, Any]:
    """The provenance record of a label's ledger as it stands."""
    lines = ledger_text.splitlines()
    return {
        "schema": 1,
        "label": declaration.get("label"),
        "project": git_commit(repo),
        "tasks": declaration.get("tasks"),
        "systems": declaration.get("systems"),
        "images": image_digests(label_root),
        "conditions": declaration.get("conditions"),
        "backend": declaration.get("backend"),
        "isolation": declaration.get("isolation"),
        "declaration_sha256": sha256_bytes(
            canonical_json({k: v for k, v in declaration.items() if k not in ("volatile", "runs")}).encode()
        ),
        "ledger_sha256": sha256_bytes(ledger_text.encode("utf-8")),
        "ledger_lines": len(lines),
        "line_sha256": [sha256_bytes(line.encode("utf-8")) for line in lines],
        "python": platform.python_version(),
        "exported_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
