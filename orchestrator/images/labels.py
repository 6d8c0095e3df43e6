"""The OCI labels every image carries: version, revision and source of the project."""
from __future__ import annotations

import functools
import subprocess
import tomllib

from . import config


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(config.REPO_ROOT), *args],
            capture_output=True, text=True, timeout=10, check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


@functools.cache
def project_version() -> str:
    """The project's version from pyproject.toml ("unknown" if it cannot be read)."""
    try:
        with open(config.REPO_ROOT / "pyproject.toml", "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def project_revision() -> str:
    """The git commit of the work tree ("unknown" outside a git checkout)."""
    return _git("rev-parse", "HEAD") or "unknown"


def project_source() -> str:
    """Where the source lives: the origin remote when there is one, else the checkout's path."""
    return _git("config", "--get", "remote.origin.url") or f"file://{config.REPO_ROOT}"


def oci_labels(role: str, content_hash: str) -> dict[str, str]:
    """Labels for a new image. The revision is the commit the image was first built at; it is
    deliberately not part of the content hash (a commit that changes nothing an image holds
    must not rebuild it)."""
    return {
        config.OCI_TITLE: f"process-bench {role}",
        config.OCI_VERSION: project_version(),
        config.OCI_REVISION: project_revision(),
        config.OCI_SOURCE: project_source(),
        config.LABEL_ROLE: role,
        config.LABEL_CONTENT_HASH: content_hash,
    }
