"""The base image: Debian packages by debootstrap, packed as a tarball, `docker import`ed.

The rootfs tarball is cached under the cache dir by the same hash as the tag, so rebuilding after
a `docker rmi` is only an import.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from . import config
from .hashing import ContentHash, short
from .labels import oci_labels
from .model import ImageBuildError, ImageRef

Report = Callable[[str], None]


def base_packages() -> list[str]:
    """The Debian packages of images/base/packages.txt, sorted and without duplicates."""
    names: set[str] = set()
    for raw in config.BASE_PACKAGES_FILE.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if any(c.isspace() or c == "," for c in line):
            raise ImageBuildError(f"{config.BASE_PACKAGES_FILE}: one package a line, got {raw!r}")
        names.add(line)
    if not names:
        raise ImageBuildError(f"{config.BASE_PACKAGES_FILE} lists no package")
    return sorted(names)


def _import_changes() -> list[str]:
    """Dockerfile instructions applied at import (the tarball is only a filesystem)."""
    return [f"ENV PATH={config.BASE_PATH_ENV}", "ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]']


def base_content_hash() -> str:
    """Hash of the base image's inputs: suite, architecture, package list, build script and
    the import's settings."""
    h = ContentHash("base")
    h.add_text("suite", config.DEBIAN_SUITE)
    h.add_text("machine", config.MACHINE)
    h.add_text("packages", "\n".join(base_packages()))
    h.add_file("build-rootfs.sh", config.BASE_BUILD_SCRIPT)
    h.add_text("import-changes", "\n".join(_import_changes()))
    return h.hexdigest()


def base_tag(content_hash: str | None = None) -> str:
    """The base image's tag, `pb-base:<hash12>`."""
    return f"{config.BASE_REPOSITORY}:{short(content_hash or base_content_hash())}"


def rootfs_tarball(content_hash: str) -> Path:
    """Where the rootfs tarball of this hash is cached."""
    return config.cache_dir() / "base" / f"rootfs-{short(content_hash)}.tar"


def _debootstrap_available() -> bool:
    return shutil.which("debootstrap") is not None or Path("/usr/sbin/debootstrap").exists()


def build_rootfs(content_hash: str, report: Report) -> Path:
    """Run images/base/build-rootfs.sh into the cache; returns the tarball."""
    out = rootfs_tarball(content_hash)
    out.parent.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        raise ImageBuildError("building the base image runs debootstrap, which needs root")
    if not _debootstrap_available():
        raise ImageBuildError("debootstrap is not installed (apt-get install debootstrap)")
    log = out.with_suffix(".log")
    report(f"{base_tag(content_hash)}: debootstrap {config.DEBIAN_SUITE} from {config.DEBIAN_MIRROR} "
           f"(about a minute; log {log})")
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    with open(log, "wb") as fh:
        proc = subprocess.run(
            ["bash", str(config.BASE_BUILD_SCRIPT), config.DEBIAN_SUITE, config.DEBIAN_MIRROR,
             ",".join(base_packages()), str(out)],
            stdout=fh, stderr=subprocess.STDOUT, env=env,
        )
    if proc.returncode != 0 or not out.exists():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise ImageBuildError(f"base rootfs build failed (exit {proc.returncode}); log {log}:\n{tail}")
    return out


def _ref(image, content_hash: str, built: bool, seconds: float) -> ImageRef:
    return ImageRef(role="base", tag=base_tag(content_hash), id=image.id, content_hash=content_hash,
                    built=built, seconds=seconds, labels=dict(image.labels or {}))


def ensure_base(client: docker.DockerClient, *, force: bool = False, no_cache: bool = False,
                report: Report = lambda _msg: None) -> ImageRef:
    """Make sure `pb-base:<hash12>` exists; import it from the cached rootfs, debootstrapping
    first when the cache has no tarball for this hash (or `no_cache`)."""
    content_hash = base_content_hash()
    tag = base_tag(content_hash)
    if not (force or no_cache):
        try:
            return _ref(client.images.get(tag), content_hash, built=False, seconds=0.0)
        except docker.errors.ImageNotFound:
            pass
    started = time.monotonic()
    tarball = rootfs_tarball(content_hash)
    if no_cache or not tarball.exists():
        build_rootfs(content_hash, report)
    report(f"{tag}: importing {tarball.name} ({tarball.stat().st_size // 2**20} MiB)")
    labels = oci_labels("base", content_hash)
    changes = _import_changes() + [f'LABEL {k}="{v}"' for k, v in sorted(labels.items())]
    try:
        client.api.import_image_from_file(str(tarball), repository=config.BASE_REPOSITORY,
                                          tag=short(content_hash), changes=changes)
        image = client.images.get(tag)
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"docker import of {tarball} as {tag} failed: {exc}") from exc
    return _ref(image, content_hash, built=True, seconds=time.monotonic() - started)
