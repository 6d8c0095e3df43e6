"""`ensure_images`: the one call other parts make to get the project's images."""
from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import docker

from . import config
from .app import ensure_app_image
from .base import base_content_hash, ensure_base, rootfs_tarball
from .model import ImageSet
from .wheelhouse import ensure_wheelhouse

Report = Callable[[str], None]
_THREAD_LOCK = threading.Lock()


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """Serialise builds across threads and processes (parallel test sessions, a campaign and a
    test run at once): the second one waits, then finds everything up to date."""
    path = config.cache_dir() / "build.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with _THREAD_LOCK, open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def docker_client() -> docker.DockerClient:
    """A client for the local engine with a timeout long enough for an image import."""
    return docker.from_env(timeout=600)


def ensure_images(client: docker.DockerClient | None = None, *, force: bool = False,
                  no_cache: bool = False, report: Report | None = None) -> ImageSet:
    """Build whatever of base, ERP, agent and gateway images is missing or stale; return them.

    Cached by content hash: when nothing changed this only looks the tags up (well under a
    second). `force` rebuilds the images from the cached rootfs and wheelhouses; `no_cache`
    also redoes the debootstrap, the wheel downloads and Docker's layer cache.
    Raises ImageBuildError with the reason when a build fails.
    """
    client = client or docker_client()
    say = report or (lambda _msg: None)
    rebuild = force or no_cache
    with build_lock(), ThreadPoolExecutor(max_workers=len(config.APP_IMAGES), thread_name_prefix="pb-image") as pool:
        # On a cold machine the wheel downloads run while debootstrap does; otherwise an app
        # build fetches its wheelhouse only if it has to build at all.
        prefetch = {}
        if no_cache or not rootfs_tarball(base_content_hash()).exists():
            prefetch = {spec.role: pool.submit(ensure_wheelhouse, spec.role, spec.requirements,
                                               force=no_cache, report=say)
                        for spec in config.APP_IMAGES}
        base = ensure_base(client, force=rebuild, no_cache=no_cache, report=say)
        wheelhouses = {role: future.result() for role, future in prefetch.items()}
        # The two app builds run side by side: most of their time is the engine committing
        # layers, not CPU, so on two cores this saves about a third of a cold build.
        futures = [pool.submit(ensure_app_image, client, spec, base, force=rebuild, no_cache=no_cache,
                               wheelhouse=wheelhouses.get(spec.role), report=say)
                   for spec in (config.ERP_IMAGE, config.AGENT_IMAGE, config.GATEWAY_IMAGE)]
        erp, agent, gateway = (f.result() for f in futures)
    return ImageSet(base=base, erp=erp, agent=agent, gateway=gateway)
