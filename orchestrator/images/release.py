"""`orchestrate images release`: image tarballs and a manifest describing them.

The manifest (manifest.json) lists, per image: tag, image id, repo digests (empty: there is no
registry), content hash, the tarball's name, size and SHA-256, the image's labels (OCI version,
revision, source; pb.content-hash), the Python packages of its venv and its Debian packages.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import docker
import docker.errors

from . import config
from .ensure import docker_client, ensure_images
from .labels import project_revision, project_source, project_version
from .model import ImageBuildError, ImageRef
from .variant import ensure_variant

Report = Callable[[str], None]
MANIFEST_FORMAT = 1
DEFAULT_RELEASE_ROLES = ("erp", "agent")  # each tarball holds the base's layers as well
# Every role a release can hold: the base and app images, and the agent CLI variants.
RELEASE_ROLES = (*config.ROLES, *config.VARIANT_IMAGES)

# Run inside the image with its own interpreter: the venv's distributions and the Debian
# packages, as one JSON document on stdout.
_INVENTORY_SCRIPT = r"""
import importlib.metadata as md, json, subprocess
py = sorted({(d.metadata["Name"], d.version) for d in md.distributions()}, key=lambda p: p[0].lower())
deb = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\n"],
                     capture_output=True, text=True, check=True).stdout.split("\n")
print(json.dumps({
    "python_packages": [{"name": n, "version": v} for n, v in py],
    "debian_packages": [dict(zip(("name", "version"), line.split("\t"))) for line in sorted(deb) if line],
}))
"""


def inventory(client: docker.DockerClient, ref: ImageRef, timeout_s: float = 60) -> dict[str, Any]:
    """The Python and Debian packages installed in an image, read by running it with no network.

    For the app images the Python packages are the venv's; for the base, the system's."""
    python = "/usr/bin/python3" if ref.role == "base" else config.PYTHON
    tag = ref.tag
    container = client.containers.create(
        tag, entrypoint=[python, "-c", _INVENTORY_SCRIPT], command=[], network_mode="none",
        labels=config.helper_labels("images-release"),
    )
    try:
        container.start()
        status = container.wait(timeout=timeout_s)
        out = container.logs(stdout=True, stderr=False).decode()
        if status.get("StatusCode") != 0:
            err = container.logs(stdout=False, stderr=True).decode()[-2000:]
            raise ImageBuildError(f"listing the packages of {tag} failed: {err}")
        return json.loads(out)
    finally:
        container.remove(force=True)


def save_image(client: docker.DockerClient, ref: ImageRef, out_dir: Path) -> tuple[Path, str, int]:
    """`docker save` one image (with its tag) to OUT/<repository>-<hash12>.tar; returns the
    path, the tarball's SHA-256 and its size. Written under a temporary name, then renamed."""
    path = out_dir / f"{ref.tag.replace(':', '-')}.tar"
    partial = path.with_suffix(".tar.partial")
    digest = hashlib.sha256()
    size = 0
    with open(partial, "wb") as fh:
        for chunk in client.images.get(ref.tag).save(chunk_size=1 << 20, named=True):
            fh.write(chunk)
            digest.update(chunk)
            size += len(chunk)
    partial.rename(path)
    return path, digest.hexdigest(), size


def release_images(out_dir: Path, *, roles: Iterable[str] = DEFAULT_RELEASE_ROLES,
                   client: docker.DockerClient | None = None,
                   report: Report = lambda _msg: None) -> Path:
    """Build what is missing, then write the tarballs of `roles` and manifest.json into
    `out_dir`; returns the manifest's path."""
    roles = list(roles)
    unknown = sorted(set(roles) - set(RELEASE_ROLES))
    if unknown or not roles:
        raise ValueError(f"unknown image role(s) {unknown or roles}; roles are {', '.join(RELEASE_ROLES)}")
    client = client or docker_client()
    images = ensure_images(client, report=report)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for role in roles:
        ref = ensure_variant(client, role, report=report) if role in config.VARIANT_IMAGES else images.by_role(role)
        report(f"{ref.tag}: saving")
        path, sha, size = save_image(client, ref, out_dir)
        image = client.images.get(ref.tag)
        entries.append({
            "role": role,
            "tag": ref.tag,
            "id": image.id,
            "repo_digests": list(image.attrs.get("RepoDigests") or []),
            "content_hash": ref.content_hash,
            "archive": path.name,
            "archive_sha256": sha,
            "archive_bytes": size,
            "labels": dict(sorted((image.labels or {}).items())),
            **inventory(client, ref),
        })
        report(f"{ref.tag}: {path.name} ({size // 2**20} MiB)")
    manifest = {
        "format": MANIFEST_FORMAT,
        "project": {"version": project_version(), "revision": project_revision(), "source": project_source()},
        "images": entries,
    }
    manifest_path = out_dir / "manifest.json"
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest_path
