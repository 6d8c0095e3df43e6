"""Suite-wide pytest settings and fixtures. Keep this file small; sections:

1. Environment, set before anything imports testcontainers.
2. The Docker engine: tests marked `docker` are skipped, with the reason, when it is unreachable.
3. Session fixtures: `docker_client`, and `images` (built once per run, cached by content hash).
"""
from __future__ import annotations

import functools
import os

# --- 1. environment --------------------------------------------------------------------------
# testcontainers' reaper (Ryuk) is an image to pull, and nothing can be pulled here.
os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"

import docker  # noqa: E402
import pytest  # noqa: E402

from orchestrator.images import ImageSet, ensure_images  # noqa: E402


# --- 2. the Docker engine --------------------------------------------------------------------
@functools.cache
def docker_unavailable_reason() -> str | None:
    """None when the engine answers a ping, else why not (asked once per run)."""
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 — any failure means: no engine for these tests
        return f"Docker engine not reachable: {exc}"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked `docker` when there is no engine (only then is the engine asked)."""
    marked = [item for item in items if item.get_closest_marker("docker")]
    if marked and (reason := docker_unavailable_reason()):
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=reason))


# --- 3. session fixtures ---------------------------------------------------------------------
@pytest.fixture(scope="session")
def docker_client():
    """A client for the local engine (skips the test when there is none)."""
    if reason := docker_unavailable_reason():
        pytest.skip(reason)
    client = docker.from_env(timeout=600)
    yield client
    client.close()


@pytest.fixture(scope="session")
def images(docker_client: docker.DockerClient) -> ImageSet:
    """The base, ERP and agent images, built once per run when missing (a cold build takes
    about three minutes; a warm one a fraction of a second)."""
    return ensure_images(docker_client)
